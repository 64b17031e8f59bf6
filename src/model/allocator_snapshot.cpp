#include "model/allocator_snapshot.h"

#include <string_view>

namespace ferret {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

bool is_allocator_machinery_frame(const SnapshotFrame& f) {
  const std::string_view file = f.filename, name = f.name;
  if (file.empty() || file == "??" || file == "?" || file.front() == '<') return true;
  for (std::string_view cpp : {".cpp", ".cc", ".cxx", ".h", ".hpp", ".cu", ".cuh", ".c"})
    if (ends_with(file, cpp)) return true;
  return name.find("gather_with_cpp") != std::string_view::npos ||
         file.find("torch/cuda/memory.py") != std::string_view::npos;
}

bool is_user_frame(const SnapshotFrame& f) {
  if (is_allocator_machinery_frame(f)) return false;
  const std::string_view file = f.filename;
  if (file.rfind("torch/", 0) == 0 || file.find("/torch/") != std::string_view::npos) return false;
  const bool packages =
      file.find("site-packages") != std::string_view::npos || file.find("dist-packages") != std::string_view::npos;
  return packages || file.find("/lib/python3") == std::string_view::npos;
}

const char* allocator_action_name(AllocatorAction a) {
  switch (a) {
    case AllocatorAction::kAlloc: return "alloc";
    case AllocatorAction::kFreeRequested: return "free_requested";
    case AllocatorAction::kFreeCompleted: return "free_completed";
    case AllocatorAction::kSegmentAlloc: return "segment_alloc";
    case AllocatorAction::kSegmentFree: return "segment_free";
    case AllocatorAction::kSegmentMap: return "segment_map";
    case AllocatorAction::kSegmentUnmap: return "segment_unmap";
    case AllocatorAction::kSnapshot: return "snapshot";
    case AllocatorAction::kOom: return "oom";
    case AllocatorAction::kOther: return "other";
  }
  return "other";
}

}  // namespace ferret
