package security

// AdminUsers reports whether some user may use the admin API: a user with
// User.Admin set, or whose roles have the admin or monitor action. The
// admin listener asks for credentials only when one exists (or a bearer
// token is configured), since nobody could use them otherwise.
func (r *Realm) AdminUsers() bool {
	if r == nil {
		return false
	}
	for _, a := range r.users {
		if a.admin || a.monitor {
			return true
		}
	}
	return false
}
