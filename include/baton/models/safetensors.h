// Weights in and out as safetensors (Hugging Face's format, what torchvision and timm weights are
// shared in): an 8-byte little-endian header length, a JSON header naming each tensor's dtype,
// shape and byte range, then the bytes. Nothing in it runs code, unlike a pickle.
//
//   baton::write_safetensors("resnet18.safetensors", baton::model_tensors(*model));
//   baton::load_safetensors(*model, "resnet18.safetensors");  // a torchvision ResNet's weights
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace baton {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// The tensors of a safetensors file, in the file's order, on the CPU. Throws std::runtime_error
// naming the file (and the tensor): not a regular file, a header that is not the format's (its
// length past the file, not JSON, a dtype it does not know, a shape that does not match its byte
// range, ranges that overlap or leave gaps), at most 100 MiB of header and 64 GiB of file.
NamedTensors read_safetensors(const std::string& path);

// Writes the tensors (any device; contiguous copies on the CPU) and string `metadata` (the
// header's "__metadata__"). The file is written beside `path` and renamed into place. Throws
// std::invalid_argument for a dtype the format lacks or a repeated name, FileError when it cannot
// be written.
void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// The parameters and buffers of `module` by name, as a state dict names them. A baton model wraps
// its network as the child "module": its prefix "module." is left out, so the names are the
// network's own (torchvision's, for resnet18 and resnet50).
NamedTensors model_tensors(const torch::nn::Module& module);

// Copies the file's tensors into `module`'s parameters and buffers of the same names (the names of
// model_tensors; a file whose names carry the prefix "module." loads too). Every one of the
// module's must be in the file with its shape; the file may hold no other. Throws
// std::runtime_error naming the file and what is missing, left over, or shaped otherwise.
void load_safetensors(torch::nn::Module& module, const std::string& path);

// Whether the file at `path` begins as a safetensors file does (a header length and '{').
bool is_safetensors(const std::string& path);

}  // namespace baton
