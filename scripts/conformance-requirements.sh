#!/usr/bin/env bash
# Runs the client requirement sets of the newest official MCP conformance
# suite (conformance-next in testdata/npm: @modelcontextprotocol/conformance
# 0.2.0-alpha.12) against cmd/conformance-client, FreeCode's MCP client code:
# every scenario a revision requires, at that revision's wire (2025-11-25:
# initialize; 2026-07-28: stateless), plus the extension and added-after-release
# scenarios the suite runs beside them without scoring.
#
# A scenario passes when none of its checks is a FAILURE or WARNING. The
# exceptions are in testdata/conformance/client-expected.yaml, each with its
# reason, in the suite's --expected-failures format (a scenario, or
# scenario:check for one check). Prints one line per scenario and revision;
# exits 1 if the suite's own verdict fails, if any scenario (scored or not)
# fails that is not listed, or if a listed one passes (then its entry goes),
# and 2 if the suite is not installed.
#
# Needs only what `make deps` installed, so it runs offline. Everything it
# writes goes to a temporary directory that is removed on exit; KEEP=1 keeps it.
#
# Usage: scripts/conformance-requirements.sh [revision...]   (default: 2025-11-25 2026-07-28)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
modules="$root/testdata/npm/node_modules"
node="$modules/.bin/node"
suite="$modules/conformance-next/dist/index.js"
expected="$root/testdata/conformance/client-expected.yaml"
go=${GO:-go}

if [[ ! -x "$node" || ! -f "$suite" ]]; then
	echo "conformance: the pinned suite (conformance-next) or Node 22 is missing under $modules; run 'make deps'" >&2
	exit 2
fi

revisions=("$@")
if [[ ${#revisions[@]} -eq 0 ]]; then
	revisions=(2025-11-25 2026-07-28)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/freecode-conformance-req.XXXXXX")
if [[ "${KEEP:-}" == 1 ]]; then
	echo "conformance: keeping $work"
else
	trap 'rm -rf "$work"' EXIT
fi
client="$work/conformance-client"
(cd "$root" && "$go" build -o "$client" ./cmd/conformance-client)

# judge <results dir> <revision>: one line per scenario found under the
# results dir, judged against the expected file; exits 1 on any line that
# is a FAIL or an XPASS.
judge() {
	NODE_PATH="$modules" "$node" -e '
		const fs = require("fs"), path = require("path"), YAML = require("yaml");
		const [dir, rev, expectedFile] = process.argv.slice(1);
		const listed = (YAML.parse(fs.readFileSync(expectedFile, "utf8")) || {}).client || [];
		// The reason of an entry is the comment block above it (entries
		// right after one another share it).
		const reasons = {};
		let comment = [], afterEntry = false;
		for (const line of fs.readFileSync(expectedFile, "utf8").split("\n")) {
			const c = line.match(/^\s+#\s?(.*)$/), e = line.match(/^\s+-\s+(\S+)/);
			if (c) {
				if (afterEntry) comment = [];
				comment.push(c[1]);
				afterEntry = false;
			} else if (e) {
				reasons[e[1]] = comment.join(" ");
				afterEntry = true;
			}
		}
		const found = [];
		const walk = d => {
			for (const f of fs.readdirSync(d, { withFileTypes: true })) {
				const p = path.join(d, f.name);
				if (!f.isDirectory()) continue;
				if (fs.existsSync(path.join(p, "checks.json"))) found.push(p); else walk(p);
			}
		};
		walk(dir);
		if (found.length === 0) { console.log("FAIL " + rev + ": no scenario wrote checks.json"); process.exit(1); }
		let bad = 0;
		for (const p of found.sort()) {
			const name = path.relative(dir, p).replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, "");
			const checks = JSON.parse(fs.readFileSync(path.join(p, "checks.json"), "utf8"));
			const failing = checks.filter(c => c.status === "FAILURE" || c.status === "WARNING");
			const whole = listed.includes(name);
			const excused = failing.filter(c => whole || listed.includes(name + ":" + c.id));
			const perCheck = listed.filter(e => e.startsWith(name + ":"));
			const ok = checks.filter(c => c.status === "SUCCESS").length;
			if (failing.length > excused.length) {
				bad++;
				console.log("FAIL  " + rev + " " + name + ": " + failing.filter(c => !excused.includes(c)).map(c => c.status + " " + c.id + (c.errorMessage ? " (" + c.errorMessage.slice(0, 200) + ")" : "")).join("; "));
				const err = path.join(p, "stderr.txt");
				if (fs.existsSync(err)) for (const l of fs.readFileSync(err, "utf8").trim().split("\n").slice(-5)) console.log("    " + l);
			} else if ((whole && failing.length === 0) || perCheck.some(e => !failing.some(c => name + ":" + c.id === e))) {
				bad++;
				console.log("XPASS " + rev + " " + name + ": listed in " + path.basename(expectedFile) + " but passed (" + ok + " SUCCESS); remove its entry");
			} else if (excused.length > 0) {
				console.log("XFAIL " + rev + " " + name + ": " + (reasons[name] || perCheck.map(e => reasons[e]).join(" ")));
			} else {
				console.log("PASS  " + rev + " " + name + ": " + ok + " SUCCESS");
			}
		}
		process.exit(bad ? 1 : 0);
	' "$@" "$expected"
}

failed=0
for rev in "${revisions[@]}"; do
	dir="$work/$rev"
	mkdir -p "$dir"
	status=0
	(cd "$dir" && "$node" "$suite" client --command "$client" --requirements "$rev" \
		--expected-failures "$expected" -o "$dir/results") >"$dir/suite.log" 2>&1 || status=$?
	if [[ $status -ne 0 ]]; then
		failed=1
		echo "FAIL  $rev: the suite's verdict (exit status $status):"
		sed -n '/SUITE SUMMARY/,$p' "$dir/suite.log" | sed 's/^/    /' | tail -n 60
	fi
	judge "$dir/results" "$rev" || failed=1
done
if [[ $failed -ne 0 ]]; then
	echo "conformance: requirement sets failed (KEEP=1 keeps the suite's output)" >&2
	exit 1
fi
echo "conformance: requirement sets ${revisions[*]}: as expected"
