// Writing a whole file so that a kill, a full disk or a crash never leaves half of it: the bytes go
// to a temporary file beside the target (created exclusively, never through a link), are flushed
// to disk, and the temporary is renamed over the target; the folder is flushed too. A reader sees
// the old file or the new one.
//
//   baton::write_file_atomically("runs/x/model.pt", bytes);
#pragma once

#include <string>
#include <string_view>

namespace baton {

// Throws FileError naming `path` when something other than a regular file is there (bad input), and
// std::runtime_error naming it when the write fails on the way: the folder cannot be written, the
// disk is full (then the file that was there is intact).
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace baton
