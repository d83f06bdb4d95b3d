#include "baton/data/text_tokenizer.h"

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "baton/data/hf_tokenizer.h"
#include "baton/data/tokenizer.h"
#include "baton/io/file.h"

namespace baton {
namespace {

namespace fs = std::filesystem;

// A small JSON file beside the tokenizer (tokenizer_config.json, config.json), or null when absent
// or not JSON: only a hint for the end-of-text token.
nlohmann::json beside(const fs::path& folder, const char* name) {
  std::error_code ec;
  const fs::path file = folder / name;
  if (!fs::is_regular_file(file, ec)) return nullptr;
  return nlohmann::json::parse(read_file(file.string(), {.what = name, .max_bytes = 16u << 20}), nullptr, false);
}

// A tokenizer.json's end of text, by what its folder says or by the usual names.
int64_t hf_end_of_text(const HfTokenizer& tokenizer, const fs::path& folder) {
  const nlohmann::json config = beside(folder, "tokenizer_config.json");
  if (config.is_object() && config.contains("eos_token")) {
    const auto& eos = config["eos_token"];
    const std::string content =
        eos.is_string() ? eos.get<std::string>() : (eos.is_object() ? eos.value("content", "") : "");
    if (auto id = tokenizer.token_id(content)) return *id;
  }
  const nlohmann::json model = beside(folder, "config.json");
  if (model.is_object() && model.contains("eos_token_id")) {  // one of the tokenizer's ids, else not it
    const auto& given = model["eos_token_id"];
    const auto& eos = given.is_array() && !given.empty() ? given[0] : given;
    if (eos.is_number_integer() && eos.get<int64_t>() >= 0 && eos.get<int64_t>() < tokenizer.vocab_size()) {
      return eos.get<int64_t>();
    }
  }
  for (const char* name : {"<|endoftext|>", "<|end_of_text|>", "</s>"}) {
    if (auto id = tokenizer.token_id(name)) return *id;
  }
  return -1;
}

bool printable_ascii(char c) { return c > ' ' && c < 0x7f; }

// A special token's text in tokenizer_config.json: "<s>", or {"content": "<s>", ...}.
std::string token_text(const nlohmann::json& token) {
  if (token.is_string()) return token.get<std::string>();
  return token.is_object() ? token.value("content", "") : "";
}

}  // namespace

struct TextTokenizer::Impl {
  std::shared_ptr<const HfTokenizer> hf;
  std::shared_ptr<const Tokenizer> sentencepiece;
  std::string file;
  int64_t end_of_text = -1;
  std::vector<int64_t> before, after;  // the special tokens around a text (encode_with_special_tokens)

  std::optional<int64_t> id_of(const std::string& token) const {
    if (hf) return hf->token_id(token);
    const int id = sentencepiece->piece_id(token);
    return id >= 0 ? std::optional<int64_t>(id) : std::nullopt;
  }
  // The tokenizer's own template (a tokenizer.json's post-processor; SentencePiece's <s>, as
  // transformers' LlamaTokenizer adds it), then tokenizer_config.json's add_bos_token and
  // add_eos_token where it says them.
  void read_template(const nlohmann::json& config, const std::string& where) {
    if (hf) {
      before = hf->single_template().before;
      after = hf->single_template().after;
    } else if (sentencepiece->begin_of_text_id() >= 0) {
      before = {sentencepiece->begin_of_text_id()};
    }
    if (!config.is_object()) return;
    for (const auto& [flag, key, side] :
         {std::tuple{"add_bos_token", "bos_token", &before}, std::tuple{"add_eos_token", "eos_token", &after}}) {
      if (!config.contains(flag) || !config[flag].is_boolean()) continue;
      side->clear();
      if (!config[flag].get<bool>()) continue;
      const std::string text = config.contains(key) ? token_text(config[key]) : "";
      const auto id = id_of(text);
      if (!id) {
        std::string why = where;
        why.append(": ").append(flag).append(" is true, and its ").append(key).append(" '").append(text);
        throw std::invalid_argument(why.append("' is not one of the tokenizer's tokens"));
      }
      side->push_back(*id);
    }
  }
};

TextTokenizer::TextTokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

TextTokenizer TextTokenizer::load(const std::string& path) {
  std::error_code ec;
  fs::path file = path;
  if (fs::is_directory(file, ec)) {
    if (fs::exists(file / "tokenizer.json", ec)) {
      file /= "tokenizer.json";
    } else if (fs::exists(file / "tokenizer.model", ec)) {
      file /= "tokenizer.model";
    } else {
      throw std::invalid_argument(path + ": no tokenizer.json or tokenizer.model beside the model in this folder");
    }
  } else if (!fs::exists(file, ec)) {
    throw std::invalid_argument(path +
                                ": no such file or folder (a model's folder, its tokenizer.json or a "
                                "SentencePiece .model)");
  }
  auto impl = std::make_shared<Impl>();
  impl->file = file.string();
  try {
    if (file.extension() == ".json") {
      impl->hf = std::make_shared<const HfTokenizer>(HfTokenizer::load(impl->file));
      impl->end_of_text = hf_end_of_text(*impl->hf, file.parent_path());
    } else {
      impl->sentencepiece = std::make_shared<const Tokenizer>(Tokenizer::load(impl->file));
      impl->end_of_text = impl->sentencepiece->end_of_text_id();
    }
    impl->read_template(beside(file.parent_path(), "tokenizer_config.json"),
                        (file.parent_path() / "tokenizer_config.json").string());
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw std::invalid_argument(e.what());
  }
  return TextTokenizer(std::move(impl));
}

TextTokenizer TextTokenizer::of(std::shared_ptr<const Tokenizer> sentencepiece) {
  auto impl = std::make_shared<Impl>();
  impl->end_of_text = sentencepiece->end_of_text_id();
  impl->sentencepiece = std::move(sentencepiece);
  impl->read_template(nullptr, "");
  return TextTokenizer(std::move(impl));
}

std::vector<int64_t> TextTokenizer::encode(std::string_view text) const {
  if (impl_->hf) return impl_->hf->encode(text);
  const std::vector<int> ids = impl_->sentencepiece->encode(std::string(text));
  return {ids.begin(), ids.end()};
}

std::vector<int64_t> TextTokenizer::encode_with_special_tokens(std::string_view text) const {
  std::vector<int64_t> ids = impl_->before;
  const std::vector<int64_t> body = encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  ids.insert(ids.end(), impl_->after.begin(), impl_->after.end());
  return ids;
}

std::string TextTokenizer::decode(const std::vector<int64_t>& ids) const {
  if (impl_->hf) return impl_->hf->decode(ids);
  std::vector<int> known;
  known.reserve(ids.size());
  for (const int64_t id : ids) {
    if (id >= 0 && id < impl_->sentencepiece->vocab_size()) known.push_back(static_cast<int>(id));
  }
  return impl_->sentencepiece->decode(known);
}

int64_t TextTokenizer::vocab_size() const {
  return impl_->hf ? impl_->hf->vocab_size() : impl_->sentencepiece->vocab_size();
}
int64_t TextTokenizer::end_of_text_id() const { return impl_->end_of_text; }
const std::string& TextTokenizer::file() const { return impl_->file; }
const Tokenizer* TextTokenizer::sentencepiece() const { return impl_->sentencepiece.get(); }

std::vector<std::string_view> TextTokenizer::parts(std::string_view text, std::size_t every) const {
  std::vector<std::string_view> out;
  std::size_t from = 0;
  while (impl_->hf && every > 0 && text.size() - from > every) {
    std::size_t cut = std::string_view::npos;
    for (std::size_t at = text.find('\n', from + every); at != std::string_view::npos && at + 1 < text.size();
         at = text.find('\n', at + 1)) {
      if (at > 0 && printable_ascii(text[at - 1]) && printable_ascii(text[at + 1])) {
        cut = at + 1;
        break;
      }
    }
    if (cut == std::string_view::npos) break;
    out.push_back(text.substr(from, cut - from));
    from = cut;
  }
  out.push_back(text.substr(from));
  return out;
}

}  // namespace baton
