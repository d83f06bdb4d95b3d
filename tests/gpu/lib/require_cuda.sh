# Sourced by the gpu label's scripts: exits 77 (skipped) with the reason when BATON_BINARY ($1 of
# the caller, passed here) has no CUDA or the machine has no GPU.
require_cuda() {
  local version
  version=$("$1" --version)
  case "$version" in
    *"CPU only"*) echo "skipped: this baton's LibTorch has no CUDA ($version); make test-gpu builds against one"; exit 77 ;;
    *" 0 GPU(s)"*) echo "skipped: no CUDA device on this machine ($version)"; exit 77 ;;
  esac
}
