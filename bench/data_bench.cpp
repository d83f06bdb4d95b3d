// The image loader's speed against the rate at which libjpeg-turbo can decode the same files whole
// (bench/README.md, "Image loader"). Peers: bench/peers/data_peers.py on the same folder.
//
//   data_bench make DIR [--count 2000] [--width 500] [--height 375] [--quality 90] [--seed 0]
//                  [--falloff-percent 90] [--noise 22]
//       writes DIR/cNN/NNNNNN.jpg: photo-like images (below) in 10 class folders
//   data_bench tokens DIR [--context 256] [--batch 64]
//       the token-shard loader: a shard of 50M random tokens written to DIR, then batches of windows
//       through the DataLoader, in tokens per second
//   data_bench run DIR [--batch 256] [--batches 16] [--workers 0] [--size 224]
//       one JSON line per case: baton's pipeline (decode, random-resized-crop, flip, a uint8
//       channels-last batch, as the DataLoader asks the ImageFolder for it), and tjDecompress2 of
//       every file whole on one thread and on as many threads as cores, the files in memory
//
// The images: no photographs ship with Debian, so each is synthesised with a natural image's
// statistics: the sum of octaves of smooth random fields (each octave's amplitude times
// --falloff-percent / 100 per doubling of frequency) plus per-pixel noise (--noise, of 255), three
// colour channels mixed from them. The defaults (90, 22) give files of the size of ImageNet's at
// 500x375 and quality 90 (about 108 KB; `make` prints the mean); --falloff-percent 60 --noise 6
// gives smaller photos' (about 40 KB).
#include <turbojpeg.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include <ATen/CPUGeneratorImpl.h>
#include "baton/data/dataloader.h"
#include "baton/data/image_folder.h"
#include "baton/data/images.h"
#include "baton/data/tokens.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

long arg(int argc, char** argv, const std::string& name, long fallback) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (argv[i] == name) return std::stol(argv[i + 1]);
  }
  return fallback;
}

// One photo-like image, uint8 [H, W, 3].
at::Tensor synthesise(int64_t height, int64_t width, float falloff, float noise, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  at::Tensor image = torch::zeros({3, height, width});
  float amplitude = 1.0f;
  for (int64_t cells = 2; cells <= std::max(height, width) / 2; cells *= 2, amplitude *= falloff) {
    const int64_t ch = std::max<int64_t>(2, cells * height / std::max(height, width));
    const int64_t cw = std::max<int64_t>(2, cells * width / std::max(height, width));
    at::Tensor grid = torch::empty({1, 3, ch, cw});
    float* g = grid.data_ptr<float>();
    for (int64_t i = 0; i < grid.numel(); ++i) g[i] = normal(rng) * amplitude;
    image += torch::upsample_bilinear2d(grid, {height, width}, /*align_corners=*/false)[0];
  }
  // Colours: each channel a mix of the three fields, as the channels of a photo correlate.
  const at::Tensor mix = torch::tensor({{0.8f, 0.15f, 0.05f}, {0.6f, 0.3f, 0.1f}, {0.5f, 0.2f, 0.3f}});
  image = torch::tensordot(mix, image, {1}, {0});
  image = image * 40.0f + 128.0f + torch::randn({3, height, width}) * noise;
  return image.clamp(0, 255).to(torch::kByte).permute({1, 2, 0}).contiguous();
}

int make(int argc, char** argv) {
  const fs::path dir = argv[2];
  const long count = arg(argc, argv, "--count", 2000);
  const long width = arg(argc, argv, "--width", 500);
  const long height = arg(argc, argv, "--height", 375);
  const int quality = static_cast<int>(arg(argc, argv, "--quality", 90));
  std::mt19937_64 rng(static_cast<uint64_t>(arg(argc, argv, "--seed", 0)));
  const float falloff = static_cast<float>(arg(argc, argv, "--falloff-percent", 90)) / 100.0f;
  const float noise = static_cast<float>(arg(argc, argv, "--noise", 22));
  uint64_t bytes = 0;
  for (long i = 0; i < count; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "c%02ld/%06ld.jpg", i % 10, i);
    fs::create_directories((dir / name).parent_path());
    baton::write_jpeg((dir / name).string(), synthesise(height, width, falloff, noise, rng), quality);
    bytes += fs::file_size(dir / name);
  }
  std::printf("{\"files\": %ld, \"width\": %ld, \"height\": %ld, \"quality\": %d, \"mean_bytes\": %.0f}\n", count,
              width, height, quality, static_cast<double>(bytes) / static_cast<double>(count));
  return 0;
}

std::vector<std::string> jpegs(const fs::path& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".jpg") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Anonymous resident memory (the heap: not the libraries' pages, not the page cache), in KiB.
long rss_anon_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stol(line.substr(8));
  }
  return 0;
}

// The largest rss_anon_kib() seen while it lives (sampled every 5 ms).
class PeakMemory {
 public:
  PeakMemory()
      : thread_([this] {
          while (!stop_) {
            peak_ = std::max(peak_.load(), rss_anon_kib());
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
        }) {}
  ~PeakMemory() {
    stop_ = true;
    thread_.join();
  }
  long peak() const { return peak_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<long> peak_{0};
  std::thread thread_;
};

// baton's pipeline, as training runs it: shuffled batches through the DataLoader (prefetch on).
double run_baton(const std::string& dir, long batch, long batches, int workers, long size) {
  auto folder = baton::ImageFolder::from_dir(
      dir, baton::ImageFolderOptions().image_size(size).workers(workers).transforms(
               nlohmann::json::parse(R"([{"random_resized_crop": {}}, "horizontal_flip"])")));
  const long before = rss_anon_kib();
  PeakMemory peak;
  // Batches of a shuffled order, as the DataLoader asks for them; their uint8 channels-last pixels
  // are what the loader hands on (the DataLoader then makes them float on the run's device).
  const int64_t per_epoch = folder->size() / batch;
  auto batch_of = [&](int64_t n) {
    const int64_t epoch = n / per_epoch, at = n % per_epoch;
    const at::Tensor order = torch::randperm(folder->size(), at::make_generator<at::CPUGeneratorImpl>(1 + epoch));
    return folder->get_epoch_batch(order.slice(0, at * batch, (at + 1) * batch), epoch);
  };
  const at::Tensor first = batch_of(0).input;  // the threads warm; not timed
  // A checksum of the first batch's pixels: the same for any number of workers and any build.
  uint64_t checksum = 1469598103934665603ull;  // FNV-1a over the bytes in NCHW order
  {
    const at::Tensor bytes = first.contiguous();
    const auto* p = bytes.data_ptr<uint8_t>();
    for (int64_t i = 0; i < bytes.numel(); ++i) checksum = (checksum ^ p[i]) * 1099511628211ull;
  }
  const auto start = Clock::now();
  long done = 0;
  for (; done < batches; ++done) {
    const baton::Batch b = batch_of(done + 1);
    if (b.input.scalar_type() != at::kByte || !b.input.is_contiguous(at::MemoryFormat::ChannelsLast)) {
      std::fprintf(stderr, "data_bench: the loader's batch is not uint8 channels-last\n");
      std::exit(1);
    }
  }
  const double s = seconds_since(start);
  const double rate = static_cast<double>(done * batch) / s;
  std::printf(
      "{\"case\": \"baton\", \"workers\": %d, \"batch\": %ld, \"batches\": %ld, \"images_per_s\": %.1f, "
      "\"loader_peak_heap_mib\": %.1f, \"batch_mib\": %.1f, \"first_batch_checksum\": %llu}\n",
      workers, batch, done, rate, static_cast<double>(peak.peak() - before) / 1024.0,
      static_cast<double>(batch * 3 * size * size) / (1 << 20), static_cast<unsigned long long>(checksum));
  return rate;
}

// tjDecompress2 of whole files (RGB), the files in memory, on `threads` threads at once.
double run_full_decode(const std::vector<std::string>& files, int threads, double seconds) {
  std::vector<std::string> data;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    data.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::atomic<long> decoded{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  const auto start = Clock::now();
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      tjhandle h = tjInitDecompress();
      std::vector<unsigned char> out;
      for (std::size_t i = static_cast<std::size_t>(t); !stop;
           i = (i + static_cast<std::size_t>(threads)) % data.size()) {
        int w = 0, hgt = 0, sub = 0, cs = 0;
        const auto* src = reinterpret_cast<const unsigned char*>(data[i].data());
        tjDecompressHeader3(h, src, data[i].size(), &w, &hgt, &sub, &cs);
        out.resize(static_cast<std::size_t>(w) * hgt * 3);
        tjDecompress2(h, src, data[i].size(), out.data(), w, 0, hgt, TJPF_RGB, 0);
        ++decoded;
      }
      tjDestroy(h);
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : pool) th.join();
  const double rate = static_cast<double>(decoded) / seconds_since(start);
  std::printf("{\"case\": \"full_decode_tjDecompress2\", \"threads\": %d, \"images_per_s\": %.1f}\n", threads, rate);
  return rate;
}

int run(int argc, char** argv) {
  const std::string dir = argv[2];
  const long batch = arg(argc, argv, "--batch", 256);
  const long batches = arg(argc, argv, "--batches", 16);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int workers = static_cast<int>(arg(argc, argv, "--workers", 0));
  const long size = arg(argc, argv, "--size", 224);
  const std::vector<std::string> files = jpegs(dir);
  if (files.empty()) {
    std::fprintf(stderr, "data_bench: no .jpg under %s (data_bench make %s first)\n", dir.c_str(), dir.c_str());
    return 2;
  }
  const bool only_baton = arg(argc, argv, "--only-baton", 0) != 0;
  const double full_one = only_baton ? 0 : run_full_decode(files, 1, 5.0);
  const double full = only_baton ? 1 : run_full_decode(files, cores, 5.0);
  const double baton = run_baton(dir, batch, batches, workers, size);
  std::printf(
      "{\"case\": \"ratios\", \"cores\": %d, \"baton_over_full_decode\": %.3f, "
      "\"full_decode_one_thread_times_cores\": %.1f}\n",
      cores, baton / full, full_one * cores);
  return 0;
}

int tokens(int argc, char** argv) {
  const fs::path dir = argv[2];
  const long context = arg(argc, argv, "--context", 256);
  const long batch = arg(argc, argv, "--batch", 64);
  fs::create_directories(dir);
  const std::string shard = (dir / "tokens_000000.bin").string();
  if (!fs::exists(shard)) {
    std::mt19937 rng(0);
    std::vector<uint16_t> t(50'000'000);
    for (auto& x : t) x = static_cast<uint16_t>(rng() % 50257);
    baton::write_token_shard(shard, t);
  }
  auto data = baton::TokenDataset::open({shard}, baton::TokenOptions().context(context).vocab_size(50257));
  baton::DataLoader loader(data, baton::DataLoaderOptions().batch_size(batch).seed(1));
  loader.start_epoch(0);
  (void)loader.next();
  long batches = 0;
  const auto start = Clock::now();
  while (seconds_since(start) < 5.0) {
    if (!loader.next()) loader.start_epoch(1);
    ++batches;
  }
  const double s = seconds_since(start);
  std::printf(
      "{\"case\": \"tokens\", \"context\": %ld, \"batch\": %ld, \"batches_per_s\": %.1f, "
      "\"tokens_per_s\": %.0f}\n",
      context, batch, static_cast<double>(batches) / s, static_cast<double>(batches * batch * context) / s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "make") return make(argc, argv);
  if (argc >= 3 && std::string(argv[1]) == "tokens") return tokens(argc, argv);
  if (argc >= 3 && std::string(argv[1]) == "run") return run(argc, argv);
  std::fprintf(stderr, "usage: data_bench make DIR [--count N] | data_bench run DIR [--batch 256] [--batches 16]\n");
  return 2;
}
