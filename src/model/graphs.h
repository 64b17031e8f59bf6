// CUDA/HIP graph relations, built by build_relations after the correlation join (docs/GRAPHS.md).
//
// A graph launch (cudaGraphLaunch, hipGraphLaunch, cuGraphLaunch) shares one correlation id with
// every kernel, memcpy and memset it replays, so the join makes it the launcher of all of them.
// What each replayed node computes was decided when the graph was captured: the CPU op around the
// launch call that created the node inside cudaStreamBeginCapture .. cudaStreamEndCapture. Here:
//   replays    every GPU activity launched by a graph launch call, or carrying a "graph id" (torch
//              >= 2.10) without any launch call found
//   captures   BeginCapture .. EndCapture per thread, and the kernel launches, async copies and fills
//              issued inside (those that ran there and then were not captured and are left out)
//   capture -> graph  by the graph id the capture's launch calls (or their recorded GPU work) carry;
//              else, the captures left and the replayed graphs left are paired in order (time, id)
//              when there are as many of each and each pair has as many nodes as launches; else a
//              graph whose node count only one capture left has
//   node -> captured launch  by graph node id when the capture side carries it; else by order, the
//              k-th launch of the capture being the k-th smallest node id (ids are handed out as
//              nodes are created) when the counts are equal; else not mapped
// Replays whose node maps to no captured launch stay with their graph launch.
#pragma once

#include "model/trace_model.h"

namespace ferret {

// cudaGraphLaunch, hipGraphLaunch, cuGraphLaunch (not cudaGraphInstantiate / cudaGraphUpload).
bool is_graph_launch_name(std::string_view name);

void build_graph_relations(TraceModel& model);

}  // namespace ferret
