#include "job/wire.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ferret {

std::vector<std::uint8_t> encode_share(const std::vector<std::size_t>& indices,
                                       const std::vector<TraceOutcome>& outcomes) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const TraceOutcome& o = outcomes[k];
    rows.push_back({indices[k], static_cast<int>(o.outcome), o.error,
                    nlohmann::json::binary(o.ok() ? encode_rank_result(o.rank) : std::vector<std::uint8_t>{})});
  }
  return nlohmann::json::to_msgpack(rows);
}

void decode_share(const std::vector<std::uint8_t>& bytes, const std::vector<std::string>& files,
                  std::vector<TraceOutcome>& all) {
  const nlohmann::json rows = nlohmann::json::from_msgpack(bytes);
  for (const nlohmann::json& row : rows) {
    const auto index = row.at(0).get<std::size_t>();
    if (index >= all.size() || index >= files.size())
      throw std::runtime_error("a process sent a result for an unknown file");
    const int outcome = row.at(1).get<int>();
    if (outcome < static_cast<int>(RankOutcome::kOk) || outcome > static_cast<int>(RankOutcome::kInternalError))
      throw std::runtime_error("a process sent an unknown outcome for " + files[index]);
    TraceOutcome& o = all[index];
    o.path = files[index];
    o.outcome = static_cast<RankOutcome>(outcome);
    o.error = row.at(2).get<std::string>();
    if (o.ok()) o.rank = decode_rank_result(row.at(3).get_binary());
  }
}

}  // namespace ferret
