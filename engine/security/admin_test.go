package security

import (
	"testing"

	"golang.org/x/crypto/bcrypt"
)

func TestAdminUsers(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	h := string(hash)
	grants := []Grant{
		{Role: "apps", Match: "*", Actions: []string{"*"}},
		{Role: "ops", Actions: []string{"admin"}},
		{Role: "watchers", Actions: []string{"monitor"}},
	}
	for _, tt := range []struct {
		name  string
		users []User
		want  bool
	}{
		{"no users", nil, false},
		{"messaging users only", []User{{Name: "app", PasswordHash: h, Roles: []string{"apps"}}}, false},
		{"an [admin] user", []User{{Name: "ops", PasswordHash: h, Admin: true}}, true},
		{"the admin action", []User{{Name: "ops", PasswordHash: h, Roles: []string{"ops"}}}, true},
		{"the monitor action", []User{{Name: "w", PasswordHash: h, Roles: []string{"watchers", "apps"}}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gs := grants
			if len(tt.users) == 0 {
				gs = nil
			}
			r, err := New(Options{Users: tt.users, Grants: gs, FailureDelay: -1})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.AdminUsers(); got != tt.want {
				t.Errorf("AdminUsers() = %v, want %v", got, tt.want)
			}
		})
	}
	if (*Realm)(nil).AdminUsers() {
		t.Error("a nil realm has admin users")
	}
}
