// libbaton_spm: SentencePiece behind a C interface (spm_api.h says why it is a library of its own).
#include "data/spm/spm_api.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

struct baton_spm {
  sentencepiece::SentencePieceProcessor processor;
};

namespace {

baton_spm* load(const char* bytes, size_t size) {
  auto* model = new baton_spm;
  if (!model->processor.LoadFromSerializedProto(std::string(bytes, size)).ok() ||
      model->processor.GetPieceSize() <= 0) {
    delete model;
    return nullptr;
  }
  return model;
}

void release(baton_spm* model) { delete model; }
int piece_size(const baton_spm* m) { return m->processor.GetPieceSize(); }
int piece_to_id(const baton_spm* m, const char* piece) { return m->processor.PieceToId(piece); }
int unk_id(const baton_spm* m) { return m->processor.unk_id(); }
int eos_id(const baton_spm* m) { return m->processor.eos_id(); }
int bos_id(const baton_spm* m) { return m->processor.bos_id(); }
int is_byte(const baton_spm* m, int id) { return m->processor.IsByte(id) ? 1 : 0; }

long encode(const baton_spm* m, const char* text, size_t size, int* ids, size_t capacity) {
  std::vector<int> out;
  if (!m->processor.Encode(std::string(text, size), &out).ok()) return -1;
  if (capacity > 0) std::copy_n(out.begin(), std::min(out.size(), capacity), ids);
  return static_cast<long>(out.size());
}

long decode(const baton_spm* m, const int* ids, size_t count, char* out, size_t capacity) {
  std::string text;
  if (!m->processor.Decode(std::vector<int>(ids, ids + count), &text).ok()) return -1;
  std::copy_n(text.data(), std::min(text.size(), capacity), out);  // bytes, not a C string
  return static_cast<long>(text.size());
}

long serialized(const baton_spm* m, char* out, size_t capacity) {
  const std::string bytes = m->processor.serialized_model_proto();
  std::copy_n(bytes.data(), std::min(bytes.size(), capacity), out);  // bytes, not a C string
  return static_cast<long>(bytes.size());
}

class Lines : public sentencepiece::SentenceIterator {
 public:
  Lines(int (*next)(void*, const char**, size_t*), void* context) : next_(next), context_(context) { Next(); }
  bool done() const override { return done_; }
  void Next() override {
    const char* line = nullptr;
    size_t size = 0;
    const int rc = next_(context_, &line, &size);
    if (rc == 1) {
      line_.assign(line, size);
    } else {
      done_ = true;
      failed_ = rc < 0;
    }
  }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override {
    return failed_ ? sentencepiece::util::Status(sentencepiece::util::StatusCode::kInternal, "reading the text failed")
                   : sentencepiece::util::Status();
  }

 private:
  int (*next_)(void*, const char**, size_t*);
  void* context_;
  std::string line_;
  bool done_ = false;
  bool failed_ = false;
};

baton_spm* train(const char* const* options, size_t count, int (*next)(void*, const char**, size_t*), void* context,
                 char* error, size_t error_capacity) {
  std::unordered_map<std::string, std::string> kwargs;
  for (size_t i = 0; i < count; ++i) {
    const std::string option = options[i];
    const size_t eq = option.find('=');
    kwargs[option.substr(0, eq)] = eq == std::string::npos ? "" : option.substr(eq + 1);
  }
  Lines lines(next, context);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(kwargs, &lines, &model);
  baton_spm* trained = status.ok() ? load(model.data(), model.size()) : nullptr;
  if (trained == nullptr && error_capacity > 0) {
    const std::string why = status.ok() ? "the trained model does not load" : std::string(status.message());
    const size_t n = std::min(why.size(), error_capacity - 1);
    std::memcpy(error, why.data(), n);
    error[n] = '\0';
  }
  return trained;
}

const baton_spm_api kApi = {load,    release, piece_size, piece_to_id, unk_id, eos_id,
                            is_byte, encode,  decode,     serialized,  train,  bos_id};

}  // namespace

extern "C" __attribute__((visibility("default"))) const baton_spm_api* baton_spm_get_api() { return &kApi; }
