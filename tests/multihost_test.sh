#!/usr/bin/env bash
# End-to-end across emulated hosts (tools/netlab: network namespaces on shaped links, every
# process started with `ip netns exec`): the ranks meet through the planner's rendezvous on the
# front host; greedy outputs through the router (Attention-DP: 2 hosts × 2 ranks, so ranks talk
# both over a host's loopback and over the links) and from rank 0 (Attention-TP: 2 hosts × 1
# rank, plain and shuffled with a semantic version's T tables through the router) equal the single
# device, also told its topology (node-level dedup, the byte counters adding up across hosts); a
# host whose link goes down is reported by the router within
# 5 s and no request outlives its deadline; nothing is left behind after Ctrl-C, and a lab killed
# with SIGKILL is cleaned up by the next one. Skips (saying why) only where namespaces cannot be
# made.
set -euo pipefail

source "$1"  # tests/cli_lib.sh: TMP, fail, expect_error
shift
NETLAB="$1"
ENGINE="$2"
PLANNER="$3"
ROUTER="$4"
RCLIENT="$5"
ECLIENT="$6"
MAKE_TINY="$7"

if [[ "$(id -u)" != 0 ]]; then
  echo "SKIPPED: the network lab makes network namespaces and needs root"
  exit 0
fi
probe="smlabprobe$$"
if ! ip netns add "$probe" 2>"$TMP/probe.err"; then
  echo "SKIPPED: cannot make a network namespace here: $(cat "$TMP/probe.err")"
  exit 0
fi
# Shaped links need the tbf qdisc; without it the hosts still test correctness, unshaped.
LINK=200
if ! tc -n "$probe" qdisc add dev lo root tbf rate 100mbit burst 16k latency 50ms 2>/dev/null; then
  echo "note: no tbf qdisc here; the emulated links are not shaped"
  LINK=0
fi
ip netns del "$probe"

"$MAKE_TINY" --arch=qwen3_moe --out="$TMP/model" --seed=5 --experts=8 --top_k=2 >/dev/null
# A subnet of its own, so that a lab someone runs meanwhile does not collide with the test's.
SUBNET="10.213.$((RANDOM % 200 + 20))"

start_lab() {  # start_lab NAME FLAGS... ; sets PID, EP
  local name="$1"
  shift
  EP="$TMP/$name.endpoints"
  "$NETLAB" --model="$TMP/model" --engine_binary="$ENGINE" --planner_binary="$PLANNER" \
    --router_binary="$ROUTER" --run_dir="$TMP/$name" --endpoints_file="$EP" --kv_cache_mb=16 \
    --link_mbit="$LINK" --subnet="$SUBNET" "$@" >"$TMP/$name.out" 2>&1 &
  PID=$!
  for _ in $(seq 1 1200); do
    [[ -s "$EP" ]] && return 0
    kill -0 "$PID" 2>/dev/null || fail "lab $name exited early: $(cat "$TMP/$name.out")"
    sleep 0.1
  done
  fail "lab $name did not start: $(cat "$TMP/$name.out")"
}

stop_lab() {  # stop_lab NAME: Ctrl-C, exit 0, no namespace of that lab left
  kill -INT "$PID"
  local rc=0
  wait "$PID" || rc=$?
  [[ "$rc" == 0 ]] || fail "$1: exit $rc after Ctrl-C: $(cat "$TMP/$1.out")"
  ip netns list | grep -q "smlab$PID" && fail "$1 left namespaces: $(ip netns list)"
  ip -o link | grep -q " sl$PID" && fail "$1 left links: $(ip -o link | grep " sl$PID")"
  return 0
}

router_of() { grep -o '"router":"[^"]*"' "$EP" | cut -d'"' -f4; }
single_device() {
  "$ENGINE" generate --model="$TMP/model" --prompt="$1" --max_tokens=8 --greedy --ignore_eos \
    --json 2>/dev/null | tokens_of
}
router_equals_single_device() {  # router_equals_single_device WHAT PROMPT...: via $EP's router
  local what="$1" prompt want got
  shift
  for prompt in "$@"; do
    want="$(single_device "$prompt")"
    got="$("$RCLIENT" generate --target="$(router_of)" --prompt="$prompt" --max_tokens=8 --json |
      tokens_of)"
    [[ -n "$want" && "$got" == "$want" ]] || fail "$what '$prompt': got $got, want $want"
  done
}

# --- Attention-DP, 2 hosts × 2 ranks (G = 4): through the router from this machine.
start_lab dp --hosts=2 --ranks_per_host=2 --attn=dp
grep -q "rank 3 on host 2" "$TMP/dp.out" || fail "placement of ranks: $(cat "$TMP/dp.out")"
[[ "$(grep -o "\"address\":\"$SUBNET\.[23]:" "$EP" | sort -u | wc -l)" == 2 ]] ||
  fail "ranks not on two hosts: $(cat "$EP")"
grep -q -- "--rendezvous grpc:$SUBNET.1:" <<<"$(pgrep -af -- "$TMP/dp/")" ||
  fail "the ranks do not meet through the front host's planner"
router_equals_single_device DP "The planner reads the traces" "def forward(self, x): return" \
  "Hello" "Experts move"
stop_lab dp

# --- The same 2 × 2 told its topology (engine serve --topology 2x2): a token crosses to the
# other host once and is fanned out there (node-level dedup). Outputs equal the single device's;
# over the ranks, the bytes sent across hosts equal those received (and within hosts likewise),
# and some crossed.
start_lab nodes --hosts=2 --ranks_per_host=2 --attn=dp --node_topology
grep -q -- "--topology=2x2" <<<"$(pgrep -af -- "$TMP/nodes/")" || fail "the ranks were not told 2x2"
router_equals_single_device "DP, node dedup" "The planner reads the traces" \
  "def forward(self, x): return" "Hello" "Experts move"
totals='[.layers[]? | [.cross_node_bytes_sent // 0, .cross_node_bytes_received // 0,
          .intra_node_bytes_sent // 0, .intra_node_bytes_received // 0] | map(tonumber)]
        | transpose | map(add // 0)'
sums="0 0 0 0"
dedup=""
for address in $(grep -o '"address":"[^"]*"' "$EP" | cut -d'"' -f4); do
  json="$("$ECLIENT" stats --target="$address" --json)"
  [[ "$(jq -r '.topology' <<<"$json")" == 2x2 && "$(jq -r '.node_dedup' <<<"$json")" == true ]] ||
    fail "rank $address does not report 2x2 with node dedup: $json"
  read -r a b c d <<<"$(jq -r "$totals | if length == 0 then \"0 0 0 0\" else map(tostring) | join(\" \") end" <<<"$json")"
  read -r sa sb sc sd <<<"$sums"
  sums="$((sa + a)) $((sb + b)) $((sc + c)) $((sd + d))"
done
read -r cross_sent cross_received intra_sent intra_received <<<"$sums"
((cross_sent > 0)) || fail "no byte crossed hosts: $sums"
((cross_sent == cross_received)) || fail "cross-host bytes sent $cross_sent != received $cross_received"
((intra_sent == intra_received)) || fail "same-host bytes sent $intra_sent != received $intra_received"
stop_lab nodes

# --- Attention-TP, 2 hosts × 1 rank: rank 0 takes requests; heads split across the link.
start_lab tp --hosts=2 --ranks_per_host=1 --attn=tp --router_policy=none
rank0="$(grep -o '"address":"[^"]*"' "$EP" | head -1 | cut -d'"' -f4)"
for prompt in "The planner reads the traces" "Hello"; do
  want="$(single_device "$prompt")"
  got="$("$ECLIENT" generate --target="$rank0" --prompt="$prompt" --max_tokens=8 --json | tokens_of)"
  [[ -n "$want" && "$got" == "$want" ]] || fail "TP '$prompt': got $got, want $want"
done
stop_lab tp

# --- Attention-TP shuffled across hosts: a semantic TP version fetched from the front host's
# planner, predicting from its T tables alone (--tp_layer_tables=false), through the router.
tp_version "$ENGINE" "$PLANNER" "$TMP/model" "$TMP/p.db"
start_lab tpsem --hosts=2 --ranks_per_host=1 --attn=tp --db="$TMP/p.db" --placement=1 \
  --tp_layer_tables=false
grep -q "predicts tokens' devices with version 1 .*affinity tables alone (--tp_layer_tables=false" \
  "$TMP/tpsem/rank0.log" || fail "rank 0 does not predict from T alone: $(cat "$TMP/tpsem/rank0.log")"
router_equals_single_device "TP shuffled" "The planner reads the traces" "Hello"
stop_lab tpsem

# --- A host's link goes down: the router says so within 5 s; requests end by their deadline.
start_lab down --hosts=2 --ranks_per_host=1 --attn=dp --down_after_s=4 --down_host=2
"$RCLIENT" generate --target="$(router_of)" --prompt="Before" --max_tokens=2 >/dev/null ||
  fail "a request before the failure failed"
for _ in $(seq 1 100); do
  grep -q "host 2's link is down" "$TMP/down.out" && break
  sleep 0.1
done
grep -q "host 2's link is down" "$TMP/down.out" || fail "the link did not go down: $(cat "$TMP/down.out")"
down_at=$SECONDS
reported=""
while ((SECONDS - down_at <= 5)); do
  stats="$("$RCLIENT" stats --target="$(router_of)" --deadline_ms=2000 || true)"
  if grep -q "(down)" <<<"$stats"; then
    reported=yes
    break
  fi
  sleep 0.2
done
[[ -n "$reported" ]] || fail "the router did not report the dead host within 5 s: $stats"
grep -q "$SUBNET.3:[0-9]* (down)" <<<"$stats" || fail "not the host that failed: $stats"
start=$SECONDS
rc=0
out="$("$RCLIENT" generate --target="$(router_of)" --prompt="After" --max_tokens=4 \
  --deadline_ms=3000 2>&1)" || rc=$?
((SECONDS - start <= 6)) || fail "a request outlived its 3 s deadline by far: $((SECONDS - start)) s"
[[ "$rc" != 0 ]] || fail "a request through a broken group succeeded: $out"
grep -Eq "Deadline Exceeded|^router_client: 14: " <<<"$out" || fail "unclear error: $out"
kill -INT "$PID"
wait "$PID" || true  # The group may already have failed (the dead rank's peers exit).
ip netns list | grep -q "smlab$PID" && fail "the failed lab left namespaces: $(ip netns list)"

# --- kill -9: the next lab removes what the killed one left, and works.
start_lab killed --hosts=1 --ranks_per_host=2 --attn=dp
killed=$PID
kill -KILL "$killed"
wait "$killed" 2>/dev/null || true
ip netns list | grep -q "smlab$killed" || fail "expected the killed lab's namespaces to remain"
start_lab after --hosts=1 --ranks_per_host=2 --attn=dp
grep -q "removed .* left by an earlier lab" "$TMP/after.out" || fail "no stale clean-up: $(cat "$TMP/after.out")"
ip netns list | grep -q "smlab$killed" && fail "the killed lab's namespaces remain"
want="$(single_device "Hello")"
got="$("$RCLIENT" generate --target="$(router_of)" --prompt="Hello" --max_tokens=8 --json | tokens_of)"
[[ "$got" == "$want" ]] || fail "after a killed lab: got $got, want $want"
stop_lab after

expect_error 2 "--model is required" -- "$NETLAB" --hosts=2
echo "PASS"
