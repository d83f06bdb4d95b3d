// Writing a whole file so that a kill, a full disk or a crash never leaves half of it: the bytes go
// to a temporary file beside the target (created exclusively, never through a link), are flushed
// to disk, and the temporary is renamed over the target; the folder is flushed too. A reader sees
// the old file or the new one.
//
//   baton::write_file_atomically("runs/x/model.pt", bytes);
//
// Every command that writes names its output through check_output first, before it reads or
// computes anything: an output that is one of the command's inputs, or not a regular file, is
// refused while nothing is lost.
//
//   baton::check_output(args.out, "--out", {args.load, args.inputs, args.recipe});
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace baton {

// Refuses (FileError naming `path` and `what`, the flag that gave it) a file output when something
// other than a regular file is there (a FIFO, a device, a folder, a link to nothing), or when it is
// one of `inputs` however named (the same file through a link, a hard link, "./x"). Empty inputs
// are skipped.
void check_output(const std::string& path, std::string_view what, const std::vector<std::string>& inputs);

// The same for an output folder: refused when something other than a folder is there, or when it
// is one of `inputs`, lies inside an input folder (what it writes would be read as input), or holds
// an input.
void check_output_folder(const std::string& path, std::string_view what, const std::vector<std::string>& inputs);

// Throws FileError naming `path` when something other than a regular file is there (bad input), and
// std::runtime_error naming it when the write fails on the way: the folder cannot be written, the
// disk is full (then the file that was there is intact).
void write_file_atomically(const std::string& path, std::string_view bytes);
// The same for a file made of `pieces`, one after another (never joined in memory).
void write_file_atomically(const std::string& path, const std::vector<std::string_view>& pieces);

}  // namespace baton
