// Package plans owns the plan catalogue (SPEC 2, Plan): the free plan's fixed limits and
// the pro and business limits, which come from configuration with documented defaults.
package plans

import (
	"fmt"
	"strings"
)

// Plan names.
const (
	Free     = "free"
	Pro      = "pro"
	Business = "business"
)

// Features a plan may include.
const (
	FeatureUsers            = "users"
	FeatureLicenses         = "licenses"
	FeatureDevices          = "devices"
	FeatureLogs             = "logs"
	FeatureTokens           = "tokens"
	FeatureVariables        = "variables"
	FeatureFiles            = "files"
	FeatureRules            = "rules"
	FeatureIntegrations     = "integrations"
	FeatureAnalytics        = "analytics"
	FeatureLicenseVariables = "license_variables"
	FeatureWebSocket        = "websocket"
)

// Limits are what a plan allows.
type Limits struct {
	MaxApps          int      `json:"maxApps"`
	MaxUsersPerApp   int      `json:"maxUsersPerApp"`
	MaxAPICallsMonth int      `json:"maxApiCallsMonth"`
	WebSocketAccess  bool     `json:"webSocketAccess"`
	Features         []string `json:"features"`
}

// Plan is one entry of the catalogue, as GET /api/plans shows it.
type Plan struct {
	Name        string  `json:"name"`
	DisplayName string  `json:"displayName"`
	PriceMonth  float64 `json:"priceMonth"`
	Limits      Limits  `json:"limits"`
}

// Has reports whether the plan includes the feature.
func (p Plan) Has(feature string) bool {
	for _, f := range p.Limits.Features {
		if f == feature {
			return true
		}
	}
	return false
}

// Config holds the configurable limits of the paid plans. Zero values take the defaults
// written in the README.
type Config struct {
	ProMaxApps               int
	ProMaxUsersPerApp        int
	ProMaxAPICallsMonth      int
	BusinessMaxApps          int
	BusinessMaxUsersPerApp   int
	BusinessMaxAPICallsMonth int
}

// Defaults of the paid plans (README, "Plans").
const (
	DefaultProMaxApps               = 10
	DefaultProMaxUsersPerApp        = 1000
	DefaultProMaxAPICallsMonth      = 100_000
	DefaultBusinessMaxApps          = 50
	DefaultBusinessMaxUsersPerApp   = 25_000
	DefaultBusinessMaxAPICallsMonth = 1_000_000
)

// Catalogue is the ordered set of plans.
type Catalogue struct {
	plans []Plan
}

// New builds the catalogue from configuration. The free plan is fixed by SPEC 2.
func New(cfg Config) (*Catalogue, error) {
	def := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	pro := Limits{
		MaxApps:          def(cfg.ProMaxApps, DefaultProMaxApps),
		MaxUsersPerApp:   def(cfg.ProMaxUsersPerApp, DefaultProMaxUsersPerApp),
		MaxAPICallsMonth: def(cfg.ProMaxAPICallsMonth, DefaultProMaxAPICallsMonth),
		Features: []string{FeatureUsers, FeatureLicenses, FeatureDevices, FeatureLogs, FeatureTokens,
			FeatureVariables, FeatureFiles, FeatureRules, FeatureIntegrations, FeatureAnalytics,
			FeatureLicenseVariables},
	}
	business := Limits{
		MaxApps:          def(cfg.BusinessMaxApps, DefaultBusinessMaxApps),
		MaxUsersPerApp:   def(cfg.BusinessMaxUsersPerApp, DefaultBusinessMaxUsersPerApp),
		MaxAPICallsMonth: def(cfg.BusinessMaxAPICallsMonth, DefaultBusinessMaxAPICallsMonth),
		WebSocketAccess:  true,
		Features:         append(append([]string(nil), pro.Features...), FeatureWebSocket),
	}
	for name, l := range map[string]Limits{Pro: pro, Business: business} {
		if l.MaxApps < 0 || l.MaxUsersPerApp < 0 || l.MaxAPICallsMonth < 0 {
			return nil, fmt.Errorf("plans: %s limits must not be negative", name)
		}
	}
	return &Catalogue{plans: []Plan{
		{Name: Free, DisplayName: "Free", PriceMonth: 0, Limits: Limits{
			MaxApps: 1, MaxUsersPerApp: 15, MaxAPICallsMonth: 2500,
			Features: []string{FeatureUsers, FeatureLicenses, FeatureDevices, FeatureLogs},
		}},
		{Name: Pro, DisplayName: "Pro", PriceMonth: 4.99, Limits: pro},
		{Name: Business, DisplayName: "Business", PriceMonth: 9.99, Limits: business},
	}}, nil
}

// All returns the plans in order free, pro, business.
func (c *Catalogue) All() []Plan {
	out := make([]Plan, len(c.plans))
	copy(out, c.plans)
	return out
}

// Get returns the plan with the name (case-insensitive); ok is false for unknown names.
func (c *Catalogue) Get(name string) (Plan, bool) {
	for _, p := range c.plans {
		if strings.EqualFold(p.Name, name) {
			return p, true
		}
	}
	return Plan{}, false
}

// MustGet returns the named plan, falling back to free for names no longer in the
// catalogue (an account keeps working if a plan is retired).
func (c *Catalogue) MustGet(name string) Plan {
	if p, ok := c.Get(name); ok {
		return p
	}
	p, _ := c.Get(Free)
	return p
}
