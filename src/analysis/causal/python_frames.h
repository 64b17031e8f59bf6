// Where the host's time goes in Python, while the GPU waits: python_function frames (recorded with
// with_stack=True) on the thread that launches the GPU work, each with the GPU idle time spent
// while it was on the stack (inclusive) or was the innermost frame (self), over the analysis window.
//
//   call tree        a frame's caller is the frame named by its "Python parent id"; frames without
//                    ids (or whose caller is not in the trace) fall back to time nesting on their
//                    thread (the innermost enclosing python_function span)
//   frame name       "file(line): function" without the line ("torch/nn/modules/module.py:
//                    _call_impl"), built-ins without their object address: all calls of one
//                    function are one row
//   preprocessing    host work outside the model: tokenisers (transformers tokenization_*,
//                    tokenizers, sentencepiece, tiktoken), image and video decoding (PIL,
//                    torchvision.io, av, decord, imageio, cv2), resizing and array work (scipy,
//                    skimage, numpy, torchvision.transforms, transformers image/video processors),
//                    and Hugging Face pipeline preprocess / postprocess / _sanitize_parameters.
//                    Its GPU idle time is what moving it off the critical path gains. Inside a
//                    DataLoader span (enumerate(DataLoader)#...) it is the input pipeline's own
//                    work, which input-bound reports: not counted as preprocessing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/intervals.h"

namespace ferret {

struct PythonFrameStat {
  std::string frame;                    // "file: function" or "<built-in method name of Type object>"
  std::uint64_t calls = 0;              // calls overlapping the window
  std::int64_t inclusive_ns = 0;        // GPU idle while the frame is on the stack (each instant once)
  std::int64_t self_ns = 0;             // GPU idle while it is the innermost frame
  std::int64_t host_ns = 0;             // wall time on the stack in the window (each instant once)
  int depth = 0;                        // its shallowest call's depth in the call tree (0: a root)
  const char* preprocessing = nullptr;  // its kind ("image/video decoding", ...), or nullptr
};

struct PythonFramesResult {
  bool recorded = false;  // the trace holds python_function frames
  bool has_gpu = false;   // GPU work in the window
  std::int32_t pid = 0;   // the thread read: the one launching GPU work (or holding most frames)
  std::int32_t tid = 0;
  std::uint64_t frames = 0;  // frames of that thread overlapping the window
  std::uint64_t steps = 0;   // selected steps (0 without steps)
  std::int64_t window_ns = 0;
  std::int64_t gpu_idle_ns = 0;
  std::int64_t python_idle_ns = 0;               // GPU idle while the thread is inside a frame
  std::int64_t python_only_idle_ns = 0;          // ... and in no operator or runtime call (pure Python)
  std::int64_t preprocessing_ns = 0;             // wall time in preprocessing frames (union), outside DataLoader spans
  std::int64_t preprocessing_idle_ns = 0;        // GPU idle during it: what moving it off the critical path gains
  std::vector<EventIndex> preprocessing_events;  // the preprocessing frames (ascending), for the what-if
  std::vector<PythonFrameStat> top;              // top-K by inclusive GPU idle
  std::vector<PythonFrameStat> top_self;         // top-K by self GPU idle (where the time is spent)
  std::vector<PythonFrameStat> preprocessing;    // top-K preprocessing frames by inclusive GPU idle
  std::vector<std::string> preprocessing_kinds;  // kinds seen, by GPU idle descending
};

// `pid`/`tid`: the thread launching GPU work (HostBlockersResult::launch); when it holds no frames,
// the thread holding the most frames in the window is read instead.
PythonFramesResult analyze_python_frames(const TraceModel& model, const AnalysisContext& ctx, std::int32_t pid,
                                         std::int32_t tid);

// The kind of host preprocessing a python_function name belongs to, or nullptr.
const char* preprocessing_kind(std::string_view frame_name);
// "file(42): function" -> "file: function"; " at 0x..." object addresses dropped.
std::string python_frame_key(std::string_view frame_name);

}  // namespace ferret
