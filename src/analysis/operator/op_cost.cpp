#include "analysis/operator/op_cost.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferret {

namespace {

using Dims = std::vector<std::int64_t>;

// One recorded argument: a tensor's shape and element type, or not a tensor.
struct Arg {
  bool tensor = false;
  Dims dims;
  std::string_view type;
  int element_size = 0;
  double numel() const {
    double n = 1;
    for (std::int64_t d : dims) n *= static_cast<double>(d);
    return n;
  }
};

struct Args {
  std::vector<Arg> args;
  std::vector<std::string> concrete;  // "Concrete Inputs", empty strings where not recorded
  std::vector<std::string> types;
  const Arg* tensor(std::size_t i) const { return i < args.size() && args[i].tensor ? &args[i] : nullptr; }
  std::string_view concrete_at(std::size_t i) const { return i < concrete.size() ? concrete[i] : std::string_view{}; }
};

std::vector<std::string> string_list(std::string_view text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array()) return out;
  for (const nlohmann::json& v : j) out.push_back(v.is_string() ? v.get<std::string>() : std::string());
  return out;
}

// nullopt when the dims text is malformed; arguments that are not a flat list of non-negative
// integers (tensor lists, scalars recorded as []) are not tensors.
std::optional<Args> parse_args(const OpCostInput& in) {
  Args a;
  const nlohmann::json dims = nlohmann::json::parse(in.input_dims, nullptr, false);
  if (dims.is_discarded() || !dims.is_array()) return std::nullopt;
  a.types = string_list(in.input_types);
  a.concrete = string_list(in.concrete_inputs);
  a.args.resize(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) {
    Arg& arg = a.args[i];
    if (i < a.types.size()) arg.type = a.types[i];
    arg.element_size = element_size_of_type_name(arg.type);
    const nlohmann::json& d = dims[i];
    if (!d.is_array() || arg.element_size == 0) continue;
    bool flat = true;
    for (const nlohmann::json& v : d) {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
        flat = false;
        break;
      }
      arg.dims.push_back(v.get<std::int64_t>());
    }
    arg.tensor = flat;
    if (!flat) arg.dims.clear();
  }
  return a;
}

// "[16, 16]" or "2" -> {16, 16} / {2}; nullopt for anything else ("same", "", "[1, x]").
std::optional<Dims> int_list(std::string_view text) {
  Dims out;
  std::size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '[' || text[i] == ']' || text[i] == ',')) ++i;
  };
  skip();
  while (i < text.size()) {
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(text.data() + i, text.data() + text.size(), v);
    if (ec != std::errc() || ptr == text.data() + i) return std::nullopt;
    out.push_back(v);
    i = static_cast<std::size_t>(ptr - text.data());
    skip();
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::string_view strip_aten(std::string_view name) {
  if (name.starts_with("aten::")) name.remove_prefix(6);
  return name;
}

// ---- kinds -----------------------------------------------------------------------------------------

struct Elementwise {
  std::string_view name;
  int flops_per_element;  // 0 for copies and fills
  enum Shape { kUnary, kBinary, kCopy, kFill } shape;
};

// FLOPs per output element: one per arithmetic operation a straightforward kernel does. gelu
// (erf form) and silu / sigmoid / tanh count their transcendental as one operation: the
// convention is for ranking, not for an instruction count (docs/ROOFLINE.md).
constexpr std::array kElementwise = {
    Elementwise{"add", 1, Elementwise::kBinary},     Elementwise{"sub", 1, Elementwise::kBinary},
    Elementwise{"mul", 1, Elementwise::kBinary},     Elementwise{"div", 1, Elementwise::kBinary},
    Elementwise{"maximum", 1, Elementwise::kBinary}, Elementwise{"minimum", 1, Elementwise::kBinary},
    Elementwise{"pow", 1, Elementwise::kBinary},     Elementwise{"relu", 1, Elementwise::kUnary},
    Elementwise{"gelu", 8, Elementwise::kUnary},     Elementwise{"silu", 4, Elementwise::kUnary},
    Elementwise{"sigmoid", 3, Elementwise::kUnary},  Elementwise{"tanh", 1, Elementwise::kUnary},
    Elementwise{"exp", 1, Elementwise::kUnary},      Elementwise{"neg", 1, Elementwise::kUnary},
    Elementwise{"rsqrt", 1, Elementwise::kUnary},    Elementwise{"sqrt", 1, Elementwise::kUnary},
    Elementwise{"abs", 1, Elementwise::kUnary},      Elementwise{"copy_", 0, Elementwise::kCopy},
    Elementwise{"to", 0, Elementwise::kCopy},        Elementwise{"_to_copy", 0, Elementwise::kCopy},
    Elementwise{"clone", 0, Elementwise::kCopy},     Elementwise{"contiguous", 0, Elementwise::kCopy},
    Elementwise{"fill_", 0, Elementwise::kFill},     Elementwise{"zero_", 0, Elementwise::kFill},
};

const Elementwise* elementwise_of(std::string_view op) {
  // In-place variants (add_, relu_) cost the same as the out-of-place op.
  for (const Elementwise& e : kElementwise)
    if (op == e.name) return &e;
  if (op.size() > 1 && op.back() == '_') {
    const std::string_view base = op.substr(0, op.size() - 1);
    for (const Elementwise& e : kElementwise)
      if (base == e.name && e.shape != Elementwise::kCopy && e.shape != Elementwise::kFill) return &e;
  }
  return nullptr;
}

constexpr std::array<std::string_view, 9> kGemm = {"mm",     "addmm",      "bmm",    "baddbmm", "matmul",
                                                   "linear", "_scaled_mm", "addmm_", "baddbmm_"};
constexpr std::array<std::string_view, 8> kConv = {
    "convolution", "_convolution", "cudnn_convolution", "miopen_convolution", "conv1d",
    "conv2d",      "conv3d",       "mkldnn_convolution"};
constexpr std::array<std::string_view, 5> kAttention = {
    "scaled_dot_product_attention", "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu"};
constexpr std::array<std::string_view, 13> kNorm = {"layer_norm",
                                                    "native_layer_norm",
                                                    "rms_norm",
                                                    "_fused_rms_norm",
                                                    "batch_norm",
                                                    "native_batch_norm",
                                                    "cudnn_batch_norm",
                                                    "miopen_batch_norm",
                                                    "_native_batch_norm_legit",
                                                    "_native_batch_norm_legit_no_training",
                                                    "group_norm",
                                                    "native_group_norm",
                                                    "instance_norm"};
constexpr std::array<std::string_view, 5> kSoftmax = {"softmax", "_softmax", "log_softmax", "_log_softmax",
                                                      "_safe_softmax"};
constexpr std::array<std::string_view, 6> kReduction = {"sum", "mean", "amax", "amin", "prod", "nansum"};

template <std::size_t N>
bool in(const std::array<std::string_view, N>& names, std::string_view op) {
  return std::find(names.begin(), names.end(), op) != names.end();
}

// ---- cost models -------------------------------------------------------------------------------------

void set_unknown(OpCost& c, std::string note) {
  c.flops = -1;
  c.bytes = -1;
  c.note = std::move(note);
}

double bytes_of(const Arg* t) { return t != nullptr ? t->numel() * t->element_size : 0.0; }

void gemm_cost(std::string_view op, const Args& a, OpCost& c) {
  const Arg *A = nullptr, *B = nullptr, *bias = nullptr;
  if (op == "mm" || op == "bmm" || op == "matmul" || op == "_scaled_mm") {
    A = a.tensor(0);
    B = a.tensor(1);
    if (op == "_scaled_mm") bias = a.tensor(4);
  } else if (op == "linear") {
    A = a.tensor(0);
    B = a.tensor(1);  // weight [N, K]
    bias = a.tensor(2);
  } else {  // addmm, baddbmm (and in-place): bias/input first
    bias = a.tensor(0);
    A = a.tensor(1);
    B = a.tensor(2);
  }
  if (A == nullptr || B == nullptr || A->dims.empty() || B->dims.empty()) {
    set_unknown(c, "operand shapes not recorded");
    return;
  }
  double batch = 1, M = 1, K = 0, N = 1;
  if (op == "linear") {
    if (B->dims.size() != 2) return set_unknown(c, "linear weight is not 2-D");
    K = static_cast<double>(A->dims.back());
    M = A->numel() / std::max(K, 1.0);
    N = static_cast<double>(B->dims[0]);
    if (static_cast<double>(B->dims[1]) != K) return set_unknown(c, "linear shapes do not agree");
  } else {
    // matmul semantics (mm and bmm are its 2-D and 3-D cases): a 1-D operand is a vector; leading
    // dims broadcast into a batch.
    const Dims& x = A->dims;
    const Dims& y = B->dims;
    K = static_cast<double>(x.back());
    M = x.size() >= 2 ? static_cast<double>(x[x.size() - 2]) : 1;
    const double ky = y.size() >= 2 ? static_cast<double>(y[y.size() - 2]) : static_cast<double>(y[0]);
    N = y.size() >= 2 ? static_cast<double>(y.back()) : 1;
    if (ky != K) return set_unknown(c, "matrix shapes do not agree (K differs)");
    // torch.float4_e2m1fn_x2 packs two fp4 values in each element: the shapes count K / 2.
    if (A->type.ends_with("_x2") && B->type.ends_with("_x2")) K *= 2;
    const std::size_t bx = x.size() > 2 ? x.size() - 2 : 0, by = y.size() > 2 ? y.size() - 2 : 0;
    for (std::size_t i = 0; i < std::max(bx, by); ++i) {
      const double dx = i < bx ? static_cast<double>(x[bx - 1 - i]) : 1;
      const double dy = i < by ? static_cast<double>(y[by - 1 - i]) : 1;
      batch *= std::max(dx, dy);
    }
  }
  const int out_size = op == "_scaled_mm" ? (bias != nullptr ? bias->element_size : 2) : A->element_size;
  if (op == "_scaled_mm" && bias == nullptr) c.note = "output dtype not recorded: 2 bytes (bf16) per element assumed";
  c.gemm_batch = batch;
  c.gemm_m = M;
  c.gemm_n = N;
  c.gemm_k = K;
  c.flops = 2 * batch * M * N * K + (bias != nullptr ? batch * M * N : 0);
  c.bytes = bytes_of(A) + bytes_of(B) + batch * M * N * out_size + bytes_of(bias);
}

struct ConvArgs {
  int bias, stride, padding, dilation, transposed, groups;
};

std::optional<ConvArgs> conv_args(std::string_view op) {
  if (op == "convolution" || op == "_convolution") return ConvArgs{2, 3, 4, 5, 6, 8};
  if (op == "conv1d" || op == "conv2d" || op == "conv3d") return ConvArgs{2, 3, 4, 5, -1, 6};
  if (op == "cudnn_convolution") return ConvArgs{-1, 3, 2, 4, -1, 5};
  if (op == "miopen_convolution" || op == "mkldnn_convolution") return ConvArgs{2, 4, 3, 5, -1, 6};
  return std::nullopt;
}

void conv_cost(std::string_view op, const Args& a, OpCost& c) {
  const Arg* x = a.tensor(0);
  const Arg* w = a.tensor(1);
  const std::optional<ConvArgs> pos = conv_args(op);
  if (x == nullptr || w == nullptr || !pos || x->dims.size() < 3 || w->dims.size() != x->dims.size())
    return set_unknown(c, "input / weight shapes not recorded");
  const std::size_t spatial = x->dims.size() - 2;
  if (pos->transposed >= 0 && a.concrete_at(static_cast<std::size_t>(pos->transposed)) == "True")
    return set_unknown(c, "transposed convolution: not modelled");
  const std::optional<Dims> stride = int_list(a.concrete_at(static_cast<std::size_t>(pos->stride)));
  const std::optional<Dims> padding = int_list(a.concrete_at(static_cast<std::size_t>(pos->padding)));
  const std::optional<Dims> dilation = int_list(a.concrete_at(static_cast<std::size_t>(pos->dilation)));
  if (!stride || !padding || !dilation)
    return set_unknown(c, "output size needs stride / padding / dilation (Concrete Inputs, torch 2.1+): not recorded");
  auto at = [&](const Dims& v, std::size_t i) { return v.size() == 1 ? v[0] : (i < v.size() ? v[i] : -1); };
  double out_spatial = 1, kernel = 1;
  for (std::size_t i = 0; i < spatial; ++i) {
    const std::int64_t in = x->dims[2 + i], k = w->dims[2 + i];
    const std::int64_t s = at(*stride, i), p = at(*padding, i), d = at(*dilation, i);
    if (s <= 0 || p < 0 || d <= 0) return set_unknown(c, "stride / padding / dilation out of range");
    const std::int64_t o = (in + 2 * p - d * (k - 1) - 1) / s + 1;
    if (o <= 0) return set_unknown(c, "empty convolution output");
    out_spatial *= static_cast<double>(o);
    kernel *= static_cast<double>(k);
  }
  const double n = static_cast<double>(x->dims[0]), cout = static_cast<double>(w->dims[0]);
  const double cin_per_group = static_cast<double>(w->dims[1]);
  const Arg* bias = pos->bias >= 0 ? a.tensor(static_cast<std::size_t>(pos->bias)) : nullptr;
  const double out = n * cout * out_spatial;
  c.flops = 2 * out * cin_per_group * kernel + (bias != nullptr ? out : 0);
  c.bytes = bytes_of(x) + bytes_of(w) + out * x->element_size + bytes_of(bias);
}

void attention_cost(std::string_view op, const Args& a, OpCost& c) {
  const Arg* q = a.tensor(0);
  const Arg* k = a.tensor(1);
  const Arg* v = a.tensor(2);
  if (q == nullptr || k == nullptr || v == nullptr || q->dims.size() != 4 || k->dims.size() != 4 || v->dims.size() != 4)
    return set_unknown(c, "query / key / value shapes not recorded as [B, H, L, D]");
  const double b = static_cast<double>(q->dims[0]), h = static_cast<double>(q->dims[1]);
  const double lq = static_cast<double>(q->dims[2]), d = static_cast<double>(q->dims[3]);
  const double lk = static_cast<double>(k->dims[2]), dv = static_cast<double>(v->dims[3]);
  // is_causal's position: scaled_dot_product_attention 5; flash 4; efficient and cuDNN 6.
  int causal_at = 5;
  if (op == "_scaled_dot_product_flash_attention" || op == "_scaled_dot_product_flash_attention_for_cpu")
    causal_at = 4;
  else if (op != "scaled_dot_product_attention")
    causal_at = 6;
  const std::string_view causal = a.concrete_at(static_cast<std::size_t>(causal_at));
  // Q·Kᵀ and P·V: 2·B·H·Lq·Lk·D and 2·B·H·Lq·Lk·Dv; a causal mask skips half of the score matrix.
  c.flops = 2 * b * h * lq * lk * (d + dv);
  if (causal == "True") {
    c.flops /= 2;
  } else if (causal != "False") {
    c.note = "is_causal not recorded: non-causal assumed";
  }
  const Arg* mask = op == "_scaled_dot_product_flash_attention" ? nullptr : a.tensor(3);
  c.bytes = bytes_of(q) + bytes_of(k) + bytes_of(v) + b * h * lq * dv * q->element_size + bytes_of(mask);
}

void norm_cost(std::string_view op, const Args& a, OpCost& c) {
  const Arg* x = a.tensor(0);
  if (x == nullptr) return set_unknown(c, "input shape not recorded");
  double params = 0;
  bool affine = false;
  for (std::size_t i = 1; i < a.args.size(); ++i)
    if (const Arg* t = a.tensor(i)) {
      params += bytes_of(t);
      affine = true;
    }
  const double n = x->numel();
  // Per element: mean (1) + variance (3) + normalise (2) [+ scale and shift (2)]; RMS: square,
  // accumulate, scale (3) [+ weight (1)].
  const bool rms = op.find("rms") != std::string_view::npos;
  const double per_element = rms ? (affine ? 4 : 3) : (affine ? 8 : 6);
  c.flops = per_element * n;
  c.bytes = 2 * n * x->element_size + params;
}

void softmax_cost(const Args& a, OpCost& c) {
  const Arg* x = a.tensor(0);
  if (x == nullptr) return set_unknown(c, "input shape not recorded");
  // max, subtract, exp, sum, divide: 5 per element; read once, write once.
  c.flops = 5 * x->numel();
  c.bytes = 2 * x->numel() * x->element_size;
}

double broadcast_numel(const Arg& x, const Arg& y) {
  const std::size_t rank = std::max(x.dims.size(), y.dims.size());
  double n = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    const double dx = i < x.dims.size() ? static_cast<double>(x.dims[x.dims.size() - 1 - i]) : 1;
    const double dy = i < y.dims.size() ? static_cast<double>(y.dims[y.dims.size() - 1 - i]) : 1;
    n *= std::max(dx, dy);
  }
  return n;
}

void elementwise_cost(const Elementwise& e, const Args& a, OpCost& c) {
  const Arg* x = a.tensor(0);
  if (x == nullptr) return set_unknown(c, "input shape not recorded");
  const double n = x->numel();
  switch (e.shape) {
    case Elementwise::kUnary:
      c.flops = e.flops_per_element * n;
      c.bytes = 2 * n * x->element_size;
      break;
    case Elementwise::kBinary: {
      const Arg* y = a.tensor(1);  // a Scalar second operand moves no bytes
      const double out = y != nullptr ? broadcast_numel(*x, *y) : n;
      c.flops = e.flops_per_element * out;
      c.bytes = bytes_of(x) + bytes_of(y) + out * x->element_size;
      break;
    }
    case Elementwise::kCopy: {
      c.flops = 0;
      if (e.name == "copy_") {  // copy_(self, src): read src, write self
        const Arg* src = a.tensor(1);
        c.bytes = bytes_of(x) + (src != nullptr ? bytes_of(src) : bytes_of(x));
      } else {
        c.bytes = 2 * bytes_of(x);
        if (e.name != "clone" && e.name != "contiguous")
          c.note = "output dtype not recorded: same element size as the input assumed";
      }
      break;
    }
    case Elementwise::kFill:
      c.flops = 0;
      c.bytes = bytes_of(x);
      break;
  }
}

void reduction_cost(const Args& a, OpCost& c) {
  const Arg* x = a.tensor(0);
  if (x == nullptr) return set_unknown(c, "input shape not recorded");
  const double n = x->numel();
  c.flops = n;  // one accumulate per input element
  double out = -1;
  if (a.args.size() == 1 ||
      (a.args.size() >= 2 && a.concrete_at(1).empty() && a.types.size() >= 2 && a.types[1] != "ScalarList")) {
    out = 1;  // a full reduction: sum(x), sum(x, dtype=...)
  } else if (const std::optional<Dims> dims = int_list(a.concrete_at(1))) {
    double reduced = 1;
    for (std::int64_t d : *dims) {
      const std::int64_t r = static_cast<std::int64_t>(x->dims.size());
      const std::int64_t i = d < 0 ? d + r : d;
      if (i < 0 || i >= r) return set_unknown(c, "reduction dim out of range");
      reduced *= static_cast<double>(x->dims[static_cast<std::size_t>(i)]);
    }
    out = reduced > 0 ? n / reduced : 0;
  }
  if (out < 0) {
    c.note = "reduced dims not recorded: bytes count the input only";
    out = 0;
  }
  c.bytes = (n + out) * x->element_size;
}

}  // namespace

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kNone: return "none";
    case OpKind::kGemm: return "gemm";
    case OpKind::kConvolution: return "convolution";
    case OpKind::kAttention: return "attention";
    case OpKind::kNorm: return "normalization";
    case OpKind::kSoftmax: return "softmax";
    case OpKind::kElementwise: return "elementwise";
    case OpKind::kReduction: return "reduction";
    case OpKind::kInductor: return "inductor";
  }
  return "none";
}

OpKind op_kind_of(std::string_view op_name) {
  const std::string_view op = strip_aten(op_name);
  if (in(kGemm, op)) return OpKind::kGemm;
  if (in(kConv, op)) return OpKind::kConvolution;
  if (in(kAttention, op)) return OpKind::kAttention;
  if (in(kNorm, op)) return OpKind::kNorm;
  if (in(kSoftmax, op)) return OpKind::kSoftmax;
  if (in(kReduction, op)) return OpKind::kReduction;
  if (elementwise_of(op) != nullptr) return OpKind::kElementwise;
  return OpKind::kNone;
}

int element_size_of_type_name(std::string_view t) {
  if (t == "double" || t == "long int" || t == "c10::complex<float>") return 8;
  if (t == "float" || t == "int" || t == "unsigned int") return 4;
  if (t == "c10::BFloat16" || t == "c10::Half" || t == "short int") return 2;
  if (t.starts_with("c10::Float8_") || t.starts_with("c10::Float4_") || t == "signed char" || t == "unsigned char" ||
      t == "bool" || t == "c10::qint8" || t == "c10::quint8")
    return 1;
  return 0;
}

Dtype dtype_of_type_name(std::string_view t) {
  if (t == "double") return Dtype::kFp64;
  if (t == "float") return Dtype::kFp32;
  if (t == "c10::BFloat16") return Dtype::kBf16;
  if (t == "c10::Half") return Dtype::kFp16;
  if (t.starts_with("c10::Float8_")) return Dtype::kFp8;
  if (t.starts_with("c10::Float4_")) return Dtype::kFp4;  // Float4_e2m1fn_x2: two values a byte
  if (t == "signed char" || t == "c10::qint8") return Dtype::kInt8;
  return Dtype::kUnknown;
}

OpCost op_cost(const OpCostInput& in) {
  OpCost c;
  if (in.inductor_flop >= 0 || in.inductor_num_gb >= 0) {
    // Inductor's own estimate for the kernel it generated.
    c.kind = OpKind::kInductor;
    c.flops = in.inductor_flop >= 0 ? static_cast<double>(in.inductor_flop) : -1;
    c.bytes = in.inductor_num_gb >= 0 ? in.inductor_num_gb * 1e9 : -1;
    for (const std::string& t : string_list(in.input_types))
      if (dtype_of_type_name(t) != Dtype::kUnknown) {
        c.dtype = dtype_of_type_name(t);
        break;
      }
    return c;
  }
  const std::string_view op = strip_aten(in.name);
  c.kind = op_kind_of(in.name);
  if (c.kind == OpKind::kNone) {
    c.note = "no cost model for this op";
    return c;
  }
  const std::optional<Args> args = parse_args(in);
  if (!args) {
    c.note = in.input_dims.empty() ? "shapes not recorded (record_shapes=False)" : "Input Dims malformed";
    return c;
  }
  for (const Arg& a : args->args)
    if (a.tensor) {
      c.dtype = dtype_of_type_name(a.type);
      break;
    }
  switch (c.kind) {
    case OpKind::kGemm: gemm_cost(op, *args, c); break;
    case OpKind::kConvolution: conv_cost(op, *args, c); break;
    case OpKind::kAttention: attention_cost(op, *args, c); break;
    case OpKind::kNorm: norm_cost(op, *args, c); break;
    case OpKind::kSoftmax: softmax_cost(*args, c); break;
    case OpKind::kReduction: reduction_cost(*args, c); break;
    case OpKind::kElementwise: elementwise_cost(*elementwise_of(op), *args, c); break;
    case OpKind::kNone:
    case OpKind::kInductor: break;
  }
  return c;
}

}  // namespace ferret
