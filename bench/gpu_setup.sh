# Sourced on the GPU machine from the project root as `.device/setup.sh` (bench/gpu_prepare.sh puts it
# there): unpacks the carried packages into a sysroot, installs the data where baton's recipes read
# it, and sets TORCH_DIR (the PyTorch wheel's CMake prefix) and BATON_CUDA_CMAKE_ARGS. What the
# machine has itself (SQLite's or OpenSSL's headers) is used instead of the carried copy.
export SYSROOT=/tmp/sysroot
if [ ! -d "$SYSROOT/usr" ]; then
  mkdir -p "$SYSROOT"
  for f in .device/debs/*.deb; do dpkg -x "$f" "$SYSROOT"; done
fi
export LD_LIBRARY_PATH="$SYSROOT/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TORCH_DIR="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
mkdir -p /usr/share/datasets/fashion-mnist && cp -u .device/data/*.gz /usr/share/datasets/fashion-mnist/ 2>/dev/null
export FASHION_MNIST_DIR=/usr/share/datasets/fashion-mnist
if [ ! -d /usr/share/games/fortunes ] && [ -d .device/fortunes ]; then
  mkdir -p /usr/share/games/fortunes && cp -u .device/fortunes/* /usr/share/games/fortunes/
fi
lib="$SYSROOT/usr/lib/x86_64-linux-gnu"
# Torch_DIR named: a build folder configured before (say, by a python3 without torch) keeps the
# LibTorch it found in its cache otherwise (a simulated run here found Debian's that way).
BATON_CUDA_CMAKE_ARGS="-DCMAKE_PREFIX_PATH=$TORCH_DIR;$SYSROOT/usr -DTorch_DIR=$TORCH_DIR/Torch"
# FindSQLite3 and FindOpenSSL look in the system's folders first: point them at the carried copies
# where the machine has no headers of its own (or always, with GPU_KIT_CARRIED=1: bench/gpu_simulate.sh).
carried=${GPU_KIT_CARRIED:-}
[ -f /usr/include/sqlite3.h ] && [ -z "$carried" ] ||
  BATON_CUDA_CMAKE_ARGS+=" -DSQLite3_INCLUDE_DIR=$SYSROOT/usr/include -DSQLite3_LIBRARY=$lib/libsqlite3.so.0"
[ -f /usr/include/openssl/evp.h ] && [ -z "$carried" ] ||
  BATON_CUDA_CMAKE_ARGS+=" -DOPENSSL_ROOT_DIR=$SYSROOT/usr -DOPENSSL_INCLUDE_DIR=$SYSROOT/usr/include -DOPENSSL_CRYPTO_LIBRARY=$lib/libcrypto.so.3"
export BATON_CUDA_CMAKE_ARGS
echo "setup: torch $(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())'); nvcc $(nvcc --version 2>/dev/null | tail -1)"
# The last word: whether python3 has torch (without it nothing can be built).
[ -n "$TORCH_DIR" ] || echo "setup: python3 ($(command -v python3)) has no torch: nothing to build against"
[ -n "$TORCH_DIR" ]
