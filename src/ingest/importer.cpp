#include "ingest/importer.h"

#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include "ingest/kineto/kineto_importer.h"
namespace ferret {

namespace {

std::mutex& registry_mutex() {
  static std::mutex mu;
  return mu;
}

std::vector<Importer>& registered() {
  static std::vector<Importer> list;
  return list;
}

// The first bytes of the input as a reader would see them: printable ASCII as text, the rest as
// hex, so a binary file says what it is ("7f 45 4c 46": an ELF binary).
std::string describe_head(std::string_view head) {
  const std::string_view shown = head.substr(0, 16);
  const bool printable = std::all_of(shown.begin(), shown.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  if (printable) return fmt::format("\"{}\"", shown);
  std::string hex;
  for (const char c : shown) hex += fmt::format("{}{:02x}", hex.empty() ? "" : " ", static_cast<unsigned char>(c));
  return "bytes " + hex;
}

}  // namespace

Importer kineto_json_importer() {
  return {"kineto-json", sniff_kineto_json, "a JSON document opening with '{' or '['", load_kineto_json};
}

std::vector<Importer> importers() {
  std::vector<Importer> list{kineto_json_importer()};
  std::lock_guard lock(registry_mutex());
  list.insert(list.end(), registered().begin(), registered().end());
  return list;
}

void register_importer(Importer importer) {
  std::lock_guard lock(registry_mutex());
  auto& list = registered();
  auto same = std::find_if(list.begin(), list.end(), [&](const Importer& i) { return i.name == importer.name; });
  if (same != list.end())
    *same = std::move(importer);
  else
    list.push_back(std::move(importer));
}

void unregister_importer(const std::string& name) {
  std::lock_guard lock(registry_mutex());
  std::erase_if(registered(), [&](const Importer& i) { return i.name == name; });
}

Importer pick_importer(std::string_view head, const std::string& source_name) {
  const std::vector<Importer> candidates = importers();
  const Importer* best = nullptr;
  int best_confidence = 0;
  for (const Importer& importer : candidates) {
    const int confidence = importer.sniff(head);
    if (confidence > best_confidence) {
      best = &importer;
      best_confidence = confidence;
    }
  }
  if (best) return *best;
  std::string expected;
  for (const Importer& importer : candidates)
    expected += fmt::format("{}{} ({})", expected.empty() ? "" : ", ", importer.name, importer.expects);
  // Point at the first byte that is not a byte order mark or whitespace: what no importer read.
  std::size_t at = head.starts_with("\xEF\xBB\xBF") ? 3 : 0;
  at = std::min(head.find_first_not_of(" \t\r\n", at), head.size());
  throw InputError(
      fmt::format("{}: byte {}: not a trace: no importer reads input that starts with {}; known formats: {}",
                  source_name, at, describe_head(head.substr(at)), expected));
}

}  // namespace ferret
