#include "job/rank_files.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace ferret {

namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Case-insensitive match of `word` at `pos`.
bool word_at(std::string_view s, std::size_t pos, std::string_view word) {
  if (pos + word.size() > s.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i)
    if (lower(s[pos + i]) != word[i]) return false;
  return true;
}

}  // namespace

bool looks_like_trace_file(std::string_view name) {
  return name.ends_with(".json") || name.ends_with(".json.gz") || name.ends_with(".json.zst") ||
         name.ends_with(".json.zstd");
}

namespace {

// Why a directory entry named like a trace is not read, or "" when it is a regular file (or a
// link to one).
std::string not_a_regular_file(const std::filesystem::directory_entry& entry) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status target = entry.status(ec);
  if (ec) {
    if (ec == std::errc::too_many_symbolic_link_levels) return "a symbolic link loop";
    if (ec == std::errc::no_such_file_or_directory) return "a dangling symbolic link";
    return "cannot be read (" + ec.message() + ")";
  }
  if (fs::is_regular_file(target)) return "";
  if (!fs::exists(target)) return "a dangling symbolic link";
  if (fs::is_fifo(target)) return "a FIFO (named pipe)";
  if (fs::is_block_file(target) || fs::is_character_file(target)) return "a device file";
  if (fs::is_directory(target)) return "a directory";
  if (fs::is_socket(target)) return "a socket";
  return "not a regular file";
}

}  // namespace

std::vector<std::string> expand_trace_inputs(const std::vector<std::string>& inputs,
                                             std::vector<std::string>* left_out) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (input == "-" || !fs::is_directory(input, ec)) {
      files.push_back(input);
      continue;
    }
    std::vector<std::string> found;
    fs::directory_iterator it(input, ec);
    if (ec) throw std::runtime_error(input + ": cannot list the directory: " + ec.message());
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) throw std::runtime_error(input + ": cannot list the directory: " + ec.message());
      const std::string name = it->path().filename().string();
      if (!looks_like_trace_file(name)) continue;
      const std::string why = not_a_regular_file(*it);
      if (why.empty())
        found.push_back(it->path().string());
      else if (left_out)
        left_out->push_back(it->path().string() + ": " + why);
    }
    if (found.empty())
      throw std::runtime_error(input + ": no trace files in the directory (*.json, *.json.gz, *.json.zst)");
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

std::optional<int> rank_from_file_name(std::string_view path) {
  const std::size_t slash = path.find_last_of('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  std::optional<int> rank;
  for (std::string_view word : {"rank", "worker", "proc", "gpu"}) {
    for (std::size_t pos = 0; pos < name.size(); ++pos) {
      if (!word_at(name, pos, word)) continue;
      // The word must start the name or follow a separator ("myrank3" is not a rank).
      if (pos > 0 && std::isalnum(static_cast<unsigned char>(name[pos - 1]))) continue;
      std::size_t digits = pos + word.size();
      if (digits < name.size() && (name[digits] == '-' || name[digits] == '_')) ++digits;
      int value = 0;
      const auto [end, ec] = std::from_chars(name.data() + digits, name.data() + name.size(), value);
      if (ec != std::errc{} || end == name.data() + digits) continue;
      // "rank3of8" and "rank-3.json" are ranks; "rank3x" is not.
      if (end != name.data() + name.size() && std::isalpha(static_cast<unsigned char>(*end)) &&
          !word_at(name, static_cast<std::size_t>(end - name.data()), "of"))
        continue;
      rank = value;
    }
    if (rank) return rank;
  }
  return std::nullopt;
}

}  // namespace ferret
