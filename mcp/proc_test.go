package mcp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChildEnv(t *testing.T) {
	parent := []string{
		"PATH=/usr/bin:/bin",
		"HOME=/home/u",
		"LANG=C.UTF-8",
		"OPENAI_API_KEY=sk-secret",
		"FREECODE_TEST_SECRET=hunter2",
		"HTTPS_PROXY=http://proxy:3128",
		"NOEQUALS",
	}
	got := childEnv(parent, map[string]string{"TOKEN": "t", "LANG": "de_DE.UTF-8"})
	require.Equal(t, []string{
		"HOME=/home/u",
		"HTTPS_PROXY=http://proxy:3128",
		"LANG=de_DE.UTF-8", // the server's env wins
		"PATH=/usr/bin:/bin",
		"TOKEN=t",
	}, got)
}
