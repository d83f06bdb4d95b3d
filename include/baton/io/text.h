// Text from outside baton (a server's answer, a file's bytes, a name on disk, a library's message)
// made fit for a message: one line, control characters written out, bytes checked for UTF-8.
//
//   std::fprintf(stderr, "baton: %s\n", baton::one_line(server_message).c_str());  // no ANSI escapes
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace baton {

// `text` as one line of a terminal: control characters (newlines, ANSI escapes) and bytes that are
// not UTF-8 written as \n, \r, \t, \xNN; cut to at most `most` bytes with "..." after.
std::string one_line(std::string_view text, std::size_t most = 200);

// How many bytes from the start of `text` are valid UTF-8 (text.size() when all are).
std::size_t valid_utf8_prefix(std::string_view text);

}  // namespace baton
