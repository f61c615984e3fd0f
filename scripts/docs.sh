#!/usr/bin/env bash
# Builds the documentation of `Moya` (its `///` comments and the catalog Sources/Moya/Moya.docc) with DocC and fails
# when anything is wrong with it:
# - any warning from the build or from DocC (an unresolved link, a documented parameter that does not exist, ...);
# - a public declaration without a full `///` comment (summary; parameters, returns and throws where they apply);
# - a Swift code block of the catalog's pages or of README.md that does not type-check against the built module
#   (the blocks of one page are checked together, in order, as one program).
# The archive is written to .build/plugins/Swift-DocC/outputs/Moya.doccarchive. Run from anywhere; scripts/test.sh
# runs it after building.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The plugin passes --warnings-as-errors on to `docc convert`; the grep also catches warnings from building the module.
status=0
swift package generate-documentation --target Moya --warnings-as-errors >"$work/docc.log" 2>&1 || status=$?
if [ "$status" -ne 0 ] || grep -q "warning:" "$work/docc.log"; then
    cat "$work/docc.log"
    echo "docs: the documentation of Moya has errors or warnings (above)"
    exit 1
fi

# The symbol graphs DocC was given (written by the plugin's build, next to the build products).
graphs=$(dirname "$(find .build -path "*extracted-symbols*" -name "Moya.symbols.json" -newer "$work" -print -quit)")
if [ "$graphs" = "." ]; then
    echo "docs: no symbol graph of Moya was written"
    exit 1
fi
python3 scripts/check-doc-comments.py "$graphs" Moya

# Type-check the code blocks against the module the plugin just built (its C dependencies need their module maps).
bin=$(swift build --show-bin-path)
python3 - "$work" Sources/Moya/Moya.docc/*.md README.md <<'PY'
import os, re, sys
work, pages = sys.argv[1], sys.argv[2:]
for page in pages:
    blocks = re.findall(r"^```swift\n(.*?)^```", open(page).read(), re.S | re.M)
    if not blocks:
        continue
    header, body = ["import Foundation"], []
    for block in blocks:
        lines = block.splitlines()
        count = 0
        while count < len(lines) and re.match(r"(import |#if canImport|#endif)", lines[count]):
            count += 1
        if lines[:count] and "\n".join(lines[:count]) not in header:
            header.append("\n".join(lines[:count]))
        body.extend(lines[count:])
    # Each page's blocks make a program of their own: a main.swift, where top-level code and `await` are allowed.
    directory = os.path.join(work, "pages", os.path.splitext(os.path.basename(page))[0])
    os.makedirs(directory)
    with open(os.path.join(directory, "main.swift"), "w") as out:
        out.write("// " + page + "\n" + "\n".join(header + body) + "\n")
PY
module_maps=()
for map in "$bin/CNetShims.build/module.modulemap" Sources/COpenSSL/module.modulemap Sources/CNghttp2/module.modulemap \
    Sources/CZlib/module.modulemap; do
    module_maps+=(-Xcc "-fmodule-map-file=$map")
done
pages=0
for program in "$work"/pages/*/main.swift; do
    status=0
    swiftc -typecheck -swift-version 6 -I "$bin/Modules" "${module_maps[@]}" "$program" >"$work/typecheck.log" 2>&1 \
        || status=$?
    if [ "$status" -ne 0 ] || grep -q "warning:" "$work/typecheck.log"; then
        cat "$work/typecheck.log"
        echo "docs: the Swift code of $(head -1 "$program" | cut -c4-) does not type-check without warnings"
        exit 1
    fi
    pages=$((pages + 1))
done
echo "docs: Moya's documentation builds without warnings; the Swift code of $pages pages type-checks"
