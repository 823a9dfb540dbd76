#!/bin/sh
# scripts/gpu_check.py must refuse a GPU_CHECK_ONLY word that selects nothing, before it runs
# anything: exit 3, one line naming the word and the names accepted. Usage: gpu_check_refusal.sh PYTHON OUT_DIR
out=$(GPU_CHECK_ONLY='torch_default nonesuch' OUT="$2" "$1" "$(dirname "$0")/../../scripts/gpu_check.py" 2>&1)
rc=$?
rm -rf "$2"
echo "$out"
[ "$rc" -eq 3 ] || { echo "FAIL: exit $rc, want 3"; exit 1; }
[ "$(echo "$out" | grep -c "selects nothing")" -eq 1 ] || { echo "FAIL: want one 'selects nothing' line"; exit 1; }
echo "$out" | grep -q "^GPU_CHECK_ONLY: 'nonesuch' selects nothing; names: rt_static rt_shared" || { echo "FAIL: wrong line"; exit 1; }
echo "$out" | grep -q "== prerequisites" && { echo "FAIL: it ran something"; exit 1; }
exit 0
