#!/usr/bin/env bash
# A tour of `freecode serve` in a throwaway home: start it, look at the
# status, call a tool through the API and through the CLI, add a server with
# `freecode mcp add` and watch it converge, add a broken one and watch it
# back off, then stop. No network once the Go modules are in the module
# cache (`go mod download`); KEEP=1 keeps the home afterwards.
set -euo pipefail

cd "$(dirname "$0")/.."
GO=${GO:-go}
KEEP=${KEEP:-}

# Bold headings on a terminal only.
if [ -t 1 ]; then
	bold=$'\033[1m' plain=$'\033[0m'
else
	bold='' plain=''
fi
step() { printf '\n%s==> %s%s\n' "$bold" "$*" "$plain"; }

# quote WORD: WORD as a shell would read it back, so printed commands can be
# pasted: as it is when it holds only safe characters, else single-quoted.
quote() {
	if [[ $1 =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
		printf '%s' "$1"
	else
		printf "'%s'" "${1//\'/\'\\\'\'}"
	fi
}
# words WORD...: the words quoted (quote), separated by spaces.
words() {
	local out=() w
	for w in "$@"; do out+=("$(quote "$w")"); done
	printf '%s' "${out[*]}"
}
# show COMMAND...: print the command, pasteable.
show() { printf '$ %s\n' "$(words "$@")"; }
run() {
	show "$@"
	"$@"
}

step "Building bin/freecode, bin/fc-reaper and bin/mcp-testserver"
# The version `freecode --version` reports, as `make install` builds it.
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || true)}
if ! "$GO" build -ldflags "-X main.version=$VERSION" -o bin/freecode ./cmd/freecode || ! "$GO" build -trimpath -o bin/fc-reaper ./cmd/fc-reaper || ! "$GO" build -o bin/mcp-testserver ./cmd/mcp-testserver; then
	echo "The build needs the Go modules of go.mod in the module cache; fetch them once with network (\`go mod download\`), then the demo runs offline." >&2
	exit 1
fi
FC=$PWD/bin/freecode
show bin/freecode --version
"$FC" --version
TS=$PWD/bin/mcp-testserver

FREECODE_HOME=$(mktemp -d "${TMPDIR:-/tmp}/freecode-demo.XXXXXX")
export FREECODE_HOME
SERVE_PID=
cleanup() {
	if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
		kill -TERM "$SERVE_PID" 2>/dev/null || true
		wait "$SERVE_PID" 2>/dev/null || true
	fi
	if [ -z "$KEEP" ]; then
		rm -rf "$FREECODE_HOME"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_for DESCRIPTION COMMAND...: retry COMMAND (quietly) for up to 20 s.
wait_for() {
	local what=$1
	shift
	for _ in $(seq 1 200); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	echo "timed out waiting for $what" >&2
	echo "--- serve log:" >&2
	cat "$FREECODE_HOME/serve.log" >&2
	exit 1
}
# phase NAME PHASE: the status table shows server NAME in PHASE.
phase() { "$FC" mcp status | grep -Eq "^$1 +[^ ]+ +[a-z]+ +$2"; }

step "A throwaway home: $FREECODE_HOME"
cat >"$FREECODE_HOME/config.json" <<JSON
{
  "model": "anthropic/claude-sonnet-4-5",
  "providers": {"anthropic": {"apiKey": "sk-ant-demo"}},
  "mcp": {
    "servers": [
      {"name": "demo", "type": "local", "command": ["$TS", "--name", "demo", "--tools", "2"]}
    ]
  },
  "permission": {"allow": ["mcp__demo"]}
}
JSON
cat "$FREECODE_HOME/config.json"

step "Starting freecode serve in the background (log: \$FREECODE_HOME/serve.log)"
"$FC" serve >"$FREECODE_HOME/serve.log" 2>&1 &
SERVE_PID=$!
SOCK=$FREECODE_HOME/run/freecode.sock
wait_for "the API socket" test -S "$SOCK"
wait_for "server demo to be ready" phase demo ready
run "$FC" mcp status
echo "(demo has 9 tools: the test server's own 7 — echo, sleep, note, add_tool, remove_tool, fail, crash — and the 2 that --tools 2 adds, tool_000 and tool_001.)"

step "Calling a tool through serve's API"
if command -v curl >/dev/null; then
	run curl -sS --unix-socket "$SOCK" -X POST -d '{"text":"hello from the demo"}' \
		http://freecode/v1/tools/mcp__demo__echo/call
	echo
	printf '$ %s | head -c 300\n' "$(words curl -sS --unix-socket "$SOCK" http://freecode/v1/tools)"
	curl -sS --unix-socket "$SOCK" http://freecode/v1/tools | head -c 300
	echo ...
else
	echo "(curl is not installed: skipping the API call)"
fi

step "Calling it with freecode mcp call: through the running serve, no second process"
run "$FC" mcp call mcp__demo__echo '{"text": "hello again"}' -v

step "Adding a second server with freecode mcp add; serve picks the edit up"
run "$FC" mcp add second local -- "$TS" --name second
wait_for "server second to be ready" phase second ready
run "$FC" mcp status

step "Breaking one: a server that exits at start is retried with backoff"
run "$FC" mcp add broken local -- "$TS" --exit-at-start 3
wait_for "server broken to back off" phase broken backoff
wait_for "a second failure of broken" sh -c "'$FC' mcp status --json | grep -q '\"restarts\": [2-9]'"
run "$FC" mcp status
run "$FC" mcp logs broken

step "The edits kept the rest of the file: model and provider keys are still there"
run grep -E '"(model|apiKey)"' "$FREECODE_HOME/config.json"

step "Stopping serve (SIGTERM): every server is stopped first"
PIDS=$("$FC" mcp status --json | sed -n 's/^ *"pid": \([0-9]*\),*$/\1/p' | tr '\n' ' ')
kill -TERM "$SERVE_PID"
status=0
wait "$SERVE_PID" || status=$?
SERVE_PID=
echo "serve exited with status $status"
tail -n 3 "$FREECODE_HOME/serve.log"
left=
for pid in $PIDS; do
	if kill -0 "$pid" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then left="$left $pid"; fi
done
if [ -n "$left" ]; then
	echo "still running:$left" >&2
	exit 1
fi
echo "no server process left (pids were: ${PIDS:-none})"

step "Now try …"
if [ -n "$KEEP" ]; then
	cat <<EOF
… this home, which stays (remove it with \`$(words rm -rf "$FREECODE_HOME")\`):
  $(words export FREECODE_HOME="$FREECODE_HOME")
  bin/freecode serve &
  bin/freecode mcp status
  bin/freecode mcp call mcp__second__note '{"text": "remember this"}'  # asks, here or from another
  bin/freecode mcp approvals                                           # terminal: mcp approve a1
EOF
else
	cat <<'EOF'
… your own servers (the demo's home is gone; `make demo KEEP=1` keeps it):
  bin/freecode mcp add fs local "npx -y @modelcontextprotocol/server-filesystem /tmp"
  bin/freecode mcp start fs
  bin/freecode serve &
  bin/freecode mcp status
EOF
fi
