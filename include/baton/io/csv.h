// CSV lines as RFC 4180 writes them: one reader for every CSV file baton reads back (the CSV
// logger's metrics.csv on resume, benchmark tables).
#pragma once

#include <string>
#include <vector>

namespace baton {

// The fields of one CSV line, quoted fields unquoted ("a,b" and "" inside a quoted field).
std::vector<std::string> csv_fields(const std::string& line);

}  // namespace baton
