#!/usr/bin/env bash
# Builds every test tagged `gpu` for the device machine, which has nvcc, the CUDA runtime and a
# driver but no Bazel and no package installs.
#
#   bash tests/gpu/build.sh [OUT_DIR]      (default .gpu_tests/, ignored by git)
#
# Each test binary links the CUDA runtime statically and carries an $ORIGIN rpath; the shared
# libraries it needs from this machine (Abseil, glog, ...) are copied beside it, except the C
# library's own and the driver's libcuda, which the device machine provides. Then run there:
#   bash tests/gpu/run.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

out="${1:-.gpu_tests}"
if [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "gpu build: no CUDA toolkit at /usr/local/cuda; nothing to build" >&2
  exit 1
fi

mapfile -t targets < <(bazel query 'attr(tags, "\bgpu\b", tests(//...))' 2>/dev/null)
if ((${#targets[@]} == 0)); then
  echo "gpu build: no test is tagged gpu" >&2
  exit 1
fi
# GPU benchmarks: binaries tagged gpu (named bench__... so run.sh runs them after the tests).
mapfile -t benches < <(bazel query 'attr(tags, "\bgpu\b", kind("cc_binary", //...))' 2>/dev/null)
echo "gpu build: ${#targets[@]} test(s): ${targets[*]}; ${#benches[@]} benchmark(s): ${benches[*]}"
bazel build -c opt "${targets[@]}" "${benches[@]}"

rm -rf "$out"
mkdir -p "$out/bin"
for target in "${targets[@]}" "${benches[@]}"; do
  pkg="${target#//}"
  pkg="${pkg%%:*}"
  name="${target##*:}"
  dest="$out/bin/${pkg//\//__}__${name}"
  [[ " ${benches[*]} " == *" $target "* ]] && dest="$out/bin/bench__${pkg//\//__}__${name}"
  cp "bazel-bin/${pkg}/${name}" "$dest"
  chmod u+w "$dest"
  # Shared libraries resolved here; the system's own C runtime and the driver stay behind.
  ldd "$dest" | awk '/=> \// { print $3 }' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux* | libcuda.so*) ;;
      libnccl.so* | libcublas*.so*) ;;  # Hundreds of MB: the device's CUDA install has them (rpath).
      *) [[ -e "$out/bin/$(basename "$lib")" ]] || cp -L "$lib" "$out/bin/" ;;
    esac
  done
done
# The shared models, for the GPU-against-reference tests (engine/gpu): the trained qwen3-moe-a
# and the deepseek-v3-tiny fixture — weights, config and reference outputs (about 34 MiB and
# 14 MiB).
shared="${SEMMOE_SHARED_DIR:-../shared}"
for name in qwen3-moe-a deepseek-v3-tiny; do
  model="$shared/models/$name"
  if [[ -f "$model/model.safetensors" ]]; then
    mkdir -p "$out/shared/models/$name/reference"
    cp "$model"/*.json "$model/model.safetensors" "$out/shared/models/$name/"
    # The reference outputs the tests compare with (final logits, router top-k): about 1 MiB.
    cp "$model"/reference/*.json "$model"/reference/*.f32 "$out/shared/models/$name/reference/"
    cp "$model"/reference/*.i32 "$out/shared/models/$name/reference/" 2>/dev/null || true
  else
    echo "gpu build: no shared model at $model; its GPU test will skip" >&2
  fi
done
cp tests/gpu/run.sh "$out/run.sh"
# Packed: the binaries compress about 3x, and the device tool carries 64 MiB with the repository.
count="$(ls "$out/bin" | grep -c '__')"
tar -czf "$out/bin.tar.gz" -C "$out" bin
rm -rf "$out/bin"
echo "gpu build: $count binaries, $(du -sh "$out" | cut -f1) in $out"
