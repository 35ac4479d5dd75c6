#!/usr/bin/env bash
# End-to-end: TLS, mutual TLS and the bearer token on a local cluster (planner, 2 engine ranks,
# router) started with --tls_cert/--tls_key/--tls_ca/--auth_token_file, which it passes on to
# every process. Certificates are made here with openssl: a CA and the cluster's certificate,
# and a second CA with its own certificate (the wrong one).
#   - gRPC: a client with the right CA and certificate is served; a plaintext client, a client
#     that trusts another CA, and a client without a certificate are refused;
#   - HTTPS on the router's OpenAI port, verified against the CA; plain HTTP and another CA fail;
#   - /metrics on the ranks over HTTPS with a client certificate only;
#   - the planner's mutations: no token → UNAUTHENTICATED, a wrong one → PERMISSION_DENIED, and
#     nothing changes in the database; the right token activates;
#   - a planner listening on a non-loopback address without TLS warns.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error, launch_cluster, stop_cluster
shift
CLUSTER="$1" ENGINE="$2" PLANNER="$3" ROUTER="$4" MAKE_TINY="$5" RCLIENT="$6" CONSOLE="$7"
command -v openssl >/dev/null || fail "openssl is missing"

# --- Certificates: CA 1 signs the cluster's certificate (for 127.0.0.1 and localhost); CA 2 is
# another authority with a certificate of its own.
cd "$TMP"
cat >san.cnf <<'EOF'
[req]
distinguished_name = dn
[dn]
[ext]
subjectAltName = IP:127.0.0.1,DNS:localhost
extendedKeyUsage = serverAuth,clientAuth
EOF
make_ca() {  # make_ca NAME
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" -keyout "$1.key" \
    -out "$1.crt" 2>/dev/null
}
make_cert() {  # make_cert NAME CA
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$1.key" -out "$1.csr" \
    -config san.cnf 2>/dev/null
  openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -CAcreateserial -days 2 \
    -extfile san.cnf -extensions ext -out "$1.crt" 2>/dev/null
}
make_ca ca1 && make_cert node ca1
make_ca ca2 && make_cert rogue ca2
printf 's3cret-token\n' >token
printf 'wrong-token\n' >wrong
cd - >/dev/null
GOOD=(--tls_cert="$TMP/node.crt" --tls_key="$TMP/node.key" --tls_ca="$TMP/ca1.crt")

"$MAKE_TINY" --arch=qwen3_moe --out="$TMP/model" --seed=5 --experts=8 --top_k=2 >/dev/null
: >"$TMP/prompts.jsonl"
for i in $(seq 1 8); do
  printf '{"id": "p%d", "text": "Request %d goes to its rank."}\n' "$i" "$i" >>"$TMP/prompts.jsonl"
done
"$ENGINE" trace --model="$TMP/model" --prompts="$TMP/prompts.jsonl" --out="$TMP/t.trace" 2>/dev/null
DB="$TMP/p.db"
"$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 >/dev/null
"$PLANNER" build --db="$DB" --model=tiny --traces="$TMP/t.trace" --devices=2 --algo=random >/dev/null
"$PLANNER" activate --db="$DB" --version=1 >/dev/null

launch_cluster tls "$CLUSTER" --model="$TMP/model" --engine_binary="$ENGINE" \
  --planner_binary="$PLANNER" --router_binary="$ROUTER" --db="$DB" --ranks=2 --kv_cache_mb=16 \
  --placement=1 "${GOOD[@]}" --auth_token_file="$TMP/token"
trap 'kill -INT $PID 2>/dev/null || true' EXIT
HTTP="$(jq -r .http "$EP")"

# --- gRPC.
"$RCLIENT" generate --target="$RADDR" --prompt="hello" --max_tokens=3 "${GOOD[@]}" >/dev/null ||
  fail "a client with the right certificate was refused"
expect_error 1 "router_client: 14:" -- "$RCLIENT" generate --target="$RADDR" --prompt=hello \
  --max_tokens=3 --deadline_ms=3000
expect_error 1 "router_client: 14:" -- "$RCLIENT" generate --target="$RADDR" --prompt=hello \
  --max_tokens=3 --deadline_ms=3000 --tls_cert="$TMP/rogue.crt" --tls_key="$TMP/rogue.key" \
  --tls_ca="$TMP/ca2.crt"
expect_error 1 "router_client: 14:" -- "$RCLIENT" generate --target="$RADDR" --prompt=hello \
  --max_tokens=3 --deadline_ms=3000 --tls_ca="$TMP/ca1.crt"  # No client certificate.

# --- HTTPS on the OpenAI port.
body='{"prompt": "hello", "max_tokens": 3}'
curl -sS --fail --cacert "$TMP/ca1.crt" -H 'Content-Type: application/json' -d "$body" \
  "https://$HTTP/v1/completions" | jq -e '.usage.completion_tokens == 3' >/dev/null ||
  fail "HTTPS with the CA"
! curl -sS -o /dev/null --cacert "$TMP/ca2.crt" "https://$HTTP/health" 2>/dev/null ||
  fail "HTTPS verified against another CA"
! curl -sS -o /dev/null "http://$HTTP/health" 2>/dev/null || fail "plain HTTP was served"

# --- Metrics over HTTPS, client certificate required.
M0="$(jq -r '.engines[0].metrics' "$EP")"
# (Into a file first: `grep -q` leaving early would break curl's pipe under pipefail.)
curl -sS --fail --cacert "$TMP/ca1.crt" --cert "$TMP/node.crt" --key "$TMP/node.key" \
  "https://$M0/metrics" >"$TMP/metrics.txt" || fail "metrics over mTLS: curl failed"
grep -q '^semmoe_engine_requests_total' "$TMP/metrics.txt" || fail "metrics over mTLS"
! curl -sS -o /dev/null --cacert "$TMP/ca1.crt" "https://$M0/metrics" 2>/dev/null ||
  fail "metrics without a client certificate"

# --- The planner's mutations need the token; refused ones change nothing.
C=("$CONSOLE" --endpoints="$EP" "${GOOD[@]}")
before="$("$PLANNER" list --db="$DB" --model=tiny)"
out="$(env -u SEMMOE_AUTH_TOKEN "${C[@]}" placements activate 2 --yes --no-wait 2>&1)" &&
  fail "activate without a token: $out"
grep -q "UNAUTHENTICATED" <<<"$out" || fail "no token: $out"
out="$("${C[@]}" --auth_token_file="$TMP/wrong" placements activate 2 --yes --no-wait 2>&1)" &&
  fail "activate with a wrong token: $out"
grep -q "PERMISSION_DENIED" <<<"$out" || fail "wrong token: $out"
out="$(SEMMOE_AUTH_TOKEN=nope "${C[@]}" experiments create --model=tiny --a=1 --b=2 --share=10 \
  --yes 2>&1)" && fail "experiment with a wrong token: $out"
[[ "$("$PLANNER" list --db="$DB" --model=tiny)" == "$before" ]] || fail "the database changed"
out="$("$PLANNER" experiment list --db="$DB" --model=tiny 2>/dev/null || true)"
! grep -q "^1 " <<<"$out" || fail "an experiment was created: $out"
out="$("${C[@]}" placements list --model=tiny)"
grep -q "1  active" <<<"$out" || fail "reads need no token: $out"
"${C[@]}" --auth_token_file="$TMP/token" placements activate 2 --yes --no-wait >/dev/null ||
  fail "activate with the token"
out="$("$PLANNER" list --db="$DB" --model=tiny)"
grep -q "^2 .*active" <<<"$out" || fail "version 2 not active: $out"

trap - EXIT
stop_cluster tls

# --- Plaintext on a non-loopback address warns.
"$PLANNER" serve --db="$TMP/w.db" --listen=0.0.0.0 --port=0 >"$TMP/warn.log" 2>&1 &
wpid=$!
for _ in $(seq 1 50); do grep -q "planner serving" "$TMP/warn.log" && break; sleep 0.1; done
kill -TERM "$wpid"
wait "$wpid" || true
grep -q "WARNING: the planner listens on 0.0.0.0 without TLS" "$TMP/warn.log" ||
  fail "no plaintext warning: $(cat "$TMP/warn.log")"
echo "tls_test: ok"
