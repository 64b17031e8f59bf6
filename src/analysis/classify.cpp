#include "analysis/classify.h"

namespace ferret {

namespace {
bool contains_nocase(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    std::size_t k = 0;
    while (k < needle.size()) {
      char c = hay[i + k];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != needle[k]) break;
      ++k;
    }
    if (k == needle.size()) return true;
  }
  return false;
}
}  // namespace

bool is_communication_kernel(std::string_view name) {
  return contains_nocase(name, "nccl") || contains_nocase(name, "rccl");
}

bool is_dataloader_span(std::string_view name) {
  return name.rfind("enumerate(DataLoader)#", 0) == 0 || name.rfind("enumerate(DataPipe)#", 0) == 0;
}

}  // namespace ferret
