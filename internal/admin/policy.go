package admin

import (
	"net/http"

	"github.com/sluicemq/sluice/engine/message"
	"github.com/sluicemq/sluice/internal/config"
)

// policyJSON is a destination's effective policy (config.PolicyExplanation).
type policyJSON struct {
	Destination string `json:"destination"`
	// Exists says whether the destination exists now; a policy is
	// explained for any name.
	Exists bool `json:"exists"`
	// Section is the index of the [[destination]] section that applies,
	// -1 for none; Match and Kind are its.
	Section int               `json:"section"`
	Match   string            `json:"match,omitempty"`
	Kind    string            `json:"kind,omitempty"`
	Values  []policyValueJSON `json:"values"`
}

type policyValueJSON struct {
	Name     string `json:"name"`
	Value    string `json:"value"`
	Source   string `json:"source"`
	Key      string `json:"key,omitempty"`
	Override bool   `json:"override"`
}

// explainPolicy is Options.Policy, or the explanation of a configuration
// with no [[destination]] section and the default connection factory
// (what an engine without a policy function applies).
func (s *Server) explainPolicy(d message.Destination) config.PolicyExplanation {
	if s.opts.Policy != nil {
		return s.opts.Policy(d)
	}
	def := config.Default()
	return def.ExplainPolicy(d)
}

// policy answers GET /api/destinations/{kind}/{name}/policy.
func (s *Server) policy(w http.ResponseWriter, r *http.Request) {
	dest, err := pathDest(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ex := s.explainPolicy(dest)
	_, err = s.eng.DestinationInfo(dest)
	out := policyJSON{Destination: ex.Destination, Exists: err == nil, Section: ex.Section, Match: ex.Match, Kind: ex.Kind,
		Values: make([]policyValueJSON, 0, len(ex.Values))}
	for _, v := range ex.Values {
		out.Values = append(out.Values, policyValueJSON{Name: v.Name, Value: v.Value, Source: v.Source, Key: v.Key, Override: v.Override})
	}
	writeJSON(w, http.StatusOK, out)
}
