// Package freecode holds the configuration schema that the binary embeds.
//
// config.cue lives at the repository root so that users can run
// `cue vet -d '#Config' config.cue ~/.freecode/config.json`; //go:embed
// cannot reach outside a package directory, so this root package embeds it.
package freecode

import _ "embed"

//go:embed config.cue
var configCUE string

// ConfigSchema returns the CUE source of the configuration schema.
func ConfigSchema() string { return configCUE }
