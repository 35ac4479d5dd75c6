#!/usr/bin/env bash
# Keeps nlohmann's throwing typed access out of router/ and common/ (docs/RELIABILITY.md,
# "Hostile input"): `value(key, default)`, `get<T>()`, `get_to`, `get_ref`, `at(key)` throw
# type_error or out_of_range on a field of the wrong type, and an exception escaping an HTTP
# worker used to end the router. Requests are read through router/openai/request_fields.h
# (the door) and common/json_fields.h (files); JSON text is parsed through common/json_fields.h
# (depth-bounded, never throws), never with nlohmann's own parse(). Tests are exempt: they
# read their own JSON. `./semmoe test` runs this after check_layers.sh; exit 1 names each use.
#
#   bash tools/check_json_access.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The two checked readers are the only places allowed to touch the typed API.
allowed='^(common/json_fields\.(cc|h)|router/openai/request_fields\.(cc|h)):'
pattern='\.get<[^>]*>\(|\.get_to\(|\.get_ref<|\.at\("|\.value\("|\.value\([^()]+,|json::parse\(|\.template get<'

found="$(grep -rnE "$pattern" router common --include='*.cc' --include='*.h' |
  grep -vE '_test\.cc:' | grep -vE "$allowed" || true)"
if [[ -n "$found" ]]; then
  echo "json access: typed nlohmann access that can throw, outside the checked readers" \
    "(router/openai/request_fields.h, common/json_fields.h):" >&2
  sed 's/^/  /' <<<"$found" >&2
  exit 1
fi
echo "json access: no throwing typed JSON access in router/ or common/"
