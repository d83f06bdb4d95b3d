# Sourced on the GPU machine from the project root as `.device/setup.sh` (bench/gpu_prepare.sh puts it
# there): unpacks the carried packages into a sysroot, installs the data where baton's recipes read
# it, and sets TORCH_DIR (the PyTorch wheel's CMake prefix) and BATON_CUDA_CMAKE_ARGS. What the
# machine has itself (SQLite's or OpenSSL's headers, libcurl.so.4) is used instead of the carried copy.
export SYSROOT=/tmp/sysroot
carried=${GPU_KIT_CARRIED:-}
# libcurl: the machine's libcurl.so.4 where it has one (Ubuntu's, same soname and API, with the
# carried headers), else Debian's with the libraries it needs (.device/debs-curl).
syscurl=$(ldconfig -p 2>/dev/null | awk '$1 == "libcurl.so.4" && /x86-64/ {print $NF; exit}')
[ -z "$carried" ] || syscurl=""
if [ ! -d "$SYSROOT/usr" ]; then
  mkdir -p "$SYSROOT"
  for f in .device/debs/*.deb; do dpkg -x "$f" "$SYSROOT"; done
  if [ -z "$syscurl" ]; then for f in .device/debs-curl/*.deb; do dpkg -x "$f" "$SYSROOT"; done; fi
fi
lib="$SYSROOT/usr/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$lib:$SYSROOT/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TORCH_DIR="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
mkdir -p /usr/share/datasets/fashion-mnist && cp -u .device/data/*.gz /usr/share/datasets/fashion-mnist/ 2>/dev/null
export FASHION_MNIST_DIR=/usr/share/datasets/fashion-mnist
if [ ! -d /usr/share/games/fortunes ] && [ -d .device/fortunes ]; then
  mkdir -p /usr/share/games/fortunes && cp -u .device/fortunes/* /usr/share/games/fortunes/
fi
# Torch_DIR named: a build folder configured before (say, by a python3 without torch) keeps the
# LibTorch it found in its cache otherwise (a simulated run here found Debian's that way).
BATON_CUDA_CMAKE_ARGS="-DCMAKE_PREFIX_PATH=$TORCH_DIR;$SYSROOT/usr -DTorch_DIR=$TORCH_DIR/Torch"
# The carried multiarch headers (jconfig.h, openssl/configuration.h, curl/) where the compiler finds
# them; the carried libraries' own libraries where the linker looks for them.
BATON_CUDA_CMAKE_ARGS+=" -DCMAKE_CXX_FLAGS=-isystem$SYSROOT/usr/include/x86_64-linux-gnu"
BATON_CUDA_CMAKE_ARGS+=" -DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$lib:$SYSROOT/lib/x86_64-linux-gnu"
BATON_CUDA_CMAKE_ARGS+=" -DCURL_INCLUDE_DIR=$SYSROOT/usr/include/x86_64-linux-gnu -DCURL_LIBRARY=${syscurl:-$lib/libcurl.so.4}"
# FindSQLite3 and FindOpenSSL look in the system's folders first: point them at the carried copies
# where the machine has no headers of its own (or always, with GPU_KIT_CARRIED=1: bench/gpu_simulate.sh).
[ -f /usr/include/sqlite3.h ] && [ -z "$carried" ] ||
  BATON_CUDA_CMAKE_ARGS+=" -DSQLite3_INCLUDE_DIR=$SYSROOT/usr/include -DSQLite3_LIBRARY=$lib/libsqlite3.so.0"
[ -f /usr/include/openssl/evp.h ] && [ -z "$carried" ] ||
  BATON_CUDA_CMAKE_ARGS+=" -DOPENSSL_ROOT_DIR=$SYSROOT/usr -DOPENSSL_INCLUDE_DIR=$SYSROOT/usr/include -DOPENSSL_CRYPTO_LIBRARY=$lib/libcrypto.so.3"
export BATON_CUDA_CMAKE_ARGS
echo "setup: libcurl ${syscurl:-carried}; torch $(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())'); nvcc $(nvcc --version 2>/dev/null | tail -1)"
# The last word: whether python3 has torch (without it nothing can be built).
[ -n "$TORCH_DIR" ] || echo "setup: python3 ($(command -v python3)) has no torch: nothing to build against"
[ -n "$TORCH_DIR" ]
