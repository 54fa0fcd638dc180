#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in testdata/npm) against cmd/conformance-client, FreeCode's MCP
# client code, for the client scenarios FreeCode is held to.
#
# A scenario passes when the suite's own verdict is a pass (exit status 0:
# no FAILURE or WARNING check, the client exited 0 in time) and its
# checks.json holds no FAILURE or WARNING and every check listed below as
# required with status SUCCESS. Prints one line per scenario; exits 1 if any
# failed, 2 if the suite is not installed.
#
# Needs only what `make deps` installed (Node 22 and the suite come from
# testdata/npm/node_modules), so it runs offline. Everything it writes goes
# to a temporary directory that is removed on exit; set KEEP=1 to keep it.
#
# Usage: scripts/conformance.sh [scenario...]   (default: all of them)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
modules="$root/testdata/npm/node_modules"
node="$modules/.bin/node"
suite="$modules/@modelcontextprotocol/conformance/dist/index.js"
go=${GO:-go}

# scenario -> checks that must be present with status SUCCESS.
declare -A required=(
	[initialize]="mcp-client-initialization"
	[tools_call]="tool-add-numbers"
	[sse-retry]="client-sse-graceful-reconnect client-sse-retry-timing client-sse-last-event-id"
)
order=(initialize tools_call sse-retry)

if [[ ! -x "$node" || ! -f "$suite" ]]; then
	echo "conformance: the pinned suite or Node 22 is missing under $modules; run 'make deps'" >&2
	exit 2
fi
if ! major=$("$node" -p 'process.versions.node.split(".")[0]' 2>/dev/null) || [[ "$major" -lt 22 ]]; then
	echo "conformance: $node is not Node 22 or later (got '${major:-?}'); run 'make deps'" >&2
	exit 2
fi

scenarios=("$@")
if [[ ${#scenarios[@]} -eq 0 ]]; then
	scenarios=("${order[@]}")
fi
for s in "${scenarios[@]}"; do
	if [[ -z "${required[$s]+x}" ]]; then
		echo "conformance: unknown scenario '$s' (known: ${order[*]})" >&2
		exit 2
	fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/freecode-conformance.XXXXXX")
if [[ "${KEEP:-}" == 1 ]]; then
	echo "conformance: keeping $work"
else
	trap 'rm -rf "$work"' EXIT
fi

client="$work/conformance-client"
(cd "$root" && "$go" build -o "$client" ./cmd/conformance-client)

# verdict <checks.json> <required ids...>: prints "ok <summary>" or the
# reasons for failure; exits non-zero on failure.
verdict() {
	"$node" -e '
		const fs = require("fs");
		const [file, ...required] = process.argv.slice(1);
		let checks;
		try { checks = JSON.parse(fs.readFileSync(file, "utf8")); }
		catch (e) { console.log("cannot read " + file + ": " + e.message); process.exit(1); }
		const count = s => checks.filter(c => c.status === s).length;
		const problems = checks
			.filter(c => c.status === "FAILURE" || c.status === "WARNING")
			.map(c => c.status + " " + c.id + ": " + (c.errorMessage || c.description));
		for (const id of required) {
			if (!checks.some(c => c.id === id && c.status === "SUCCESS")) problems.push("missing SUCCESS check " + id);
		}
		if (problems.length) { console.log(problems.join("; ")); process.exit(1); }
		const timing = checks.find(c => c.details && typeof c.details.actualDelayMs === "number");
		const extra = timing ? ", reconnected after " + timing.details.actualDelayMs + " ms (retry: " + timing.details.expectedRetryMs + ")" : "";
		console.log(count("SUCCESS") + " SUCCESS, 0 FAILURE, 0 WARNING (" + required.join(", ") + extra + ")");
	' "$@"
}

failed=0
for s in "${scenarios[@]}"; do
	dir="$work/$s"
	mkdir -p "$dir"
	log="$dir/suite.log"
	# The suite writes results/ relative to -o; run it inside the temp dir so
	# nothing lands in the repository.
	status=0
	(cd "$dir" && "$node" "$suite" client --command "$client" --scenario "$s" -o "$dir/results") >"$log" 2>&1 || status=$?
	checks=$(find "$dir/results" -name checks.json -print -quit 2>/dev/null || true)
	if [[ -z "$checks" ]]; then
		summary="no checks.json written"
		ok=false
	elif summary=$(verdict "$checks" ${required[$s]}); then
		ok=true
	else
		ok=false
	fi
	if [[ $status -ne 0 ]]; then
		ok=false
		summary="suite exit status $status; $summary"
	fi
	if $ok; then
		echo "PASS $s: $summary"
	else
		failed=1
		echo "FAIL $s: $summary"
		sed 's/^/    /' "$log" | tail -n 40
		if [[ -n "$checks" ]]; then
			echo "    client stderr:"
			sed 's/^/    | /' "$(dirname "$checks")/stderr.txt" | tail -n 20
		fi
	fi
done
exit $failed
