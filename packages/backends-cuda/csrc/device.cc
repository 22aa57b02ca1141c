// device.cc: availability, devices and streams of the cuda backend.
//
// Availability is probed once, lazily, with cudaGetDeviceCount: on a machine
// without a GPU or driver that call fails (the runtime is linked statically and
// loads the driver itself), and its error text becomes unavailable_reason().
// Nothing here throws at import time. Each device gets one non-blocking
// stream, created on first use; all kernels and copies of that device run on
// it, so the host waits only where it reads data back (to_numpy, index checks).
#include <cstdlib>
#include <mutex>

#include "common.cuh"

namespace lamina_cuda {

namespace {

struct DeviceState {
  std::once_flag probe_once;
  bool available = false;
  std::string reason;
  int count = 0;
  bool sync_after_launch = false;
  std::mutex mutex;
  std::vector<cudaStream_t> streams;  // lazily created, index = device
  std::vector<int> sms;
};

DeviceState& state() {
  // Leaked on purpose: streams must outlive every Array freed at interpreter exit.
  static DeviceState* s = new DeviceState();
  return *s;
}

void probe() {
  DeviceState& s = state();
  std::call_once(s.probe_once, [&s] {
    const char* sync = std::getenv("LAMINA_CUDA_SYNC");
    s.sync_after_launch = sync != nullptr && sync[0] == '1';
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      s.reason = cat("cudaGetDeviceCount failed: ", cudaGetErrorName(err), ": ",
                     cudaGetErrorString(err));
      cudaGetLastError();  // clear, so later calls do not report it again
      return;
    }
    if (n <= 0) {
      s.reason = "cudaGetDeviceCount found no CUDA-capable device";
      return;
    }
    s.available = true;
    s.count = n;
    s.streams.assign(static_cast<std::size_t>(n), nullptr);
    s.sms.assign(static_cast<std::size_t>(n), 0);
  });
}

}  // namespace

void throw_cuda_error(cudaError_t err, const char* what, const char* call) {
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  throw std::runtime_error(cat(what, ": CUDA error ", cudaGetErrorName(err), " (",
                               static_cast<int>(err), "): ", cudaGetErrorString(err),
                               " [", call, "]"));
}

void check_launch(const char* kernel, cudaStream_t stream) {
  LAMINA_CUDA_CHECK(cudaGetLastError(), kernel);
  if (state().sync_after_launch) LAMINA_CUDA_CHECK(cudaStreamSynchronize(stream), kernel);
}

bool is_available() {
  probe();
  return state().available;
}

std::string unavailable_reason() {
  probe();
  return state().reason;
}

void require_available(const char* op) {
  if (!is_available())
    throw std::runtime_error(cat(op, ": the cuda backend is unavailable: ", state().reason));
}

int device_count() { return is_available() ? state().count : 0; }

void set_device(int device, const char* op) {
  require_available(op);
  if (device < 0 || device >= state().count)
    value_error(op, ": device cuda:", device, " does not exist; this machine has ",
                state().count, " CUDA device(s)");
  int current = -1;
  LAMINA_CUDA_CHECK(cudaGetDevice(&current), op);
  if (current != device) LAMINA_CUDA_CHECK(cudaSetDevice(device), op);
}

cudaStream_t device_stream(int device) {
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  cudaStream_t& stream = s.streams.at(static_cast<std::size_t>(device));
  if (stream == nullptr) {
    set_device(device, "device_stream");
    LAMINA_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                      "device_stream");
  }
  return stream;
}

int sm_count(int device) {
  DeviceState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  int& n = s.sms.at(static_cast<std::size_t>(device));
  if (n == 0)
    LAMINA_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device),
                      "sm_count");
  return n;
}

void synchronize() {
  require_available("synchronize");
  DeviceState& s = state();
  for (int d = 0; d < s.count; ++d) {
    cudaStream_t stream = nullptr;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      stream = s.streams[static_cast<std::size_t>(d)];
    }
    if (stream != nullptr) LAMINA_CUDA_CHECK(cudaStreamSynchronize(stream), "synchronize");
  }
}

Launch launch_on(const char* op, std::initializer_list<const Array*> arrays) {
  const Array* first = *arrays.begin();
  int i = 0;
  for (const Array* a : arrays) {
    if (a->device() != first->device())
      value_error(op, ": operands are on different devices, cuda:", first->device(),
                  " (arg 0) and cuda:", a->device(), " (arg ", i,
                  "); copy one with to_numpy/from_numpy");
    ++i;
  }
  set_device(first->device(), op);
  return Launch{first->device(), device_stream(first->device())};
}

// ---------------------------------------------------------------- validation helpers
const char* dtype_name(DType dt) {
  switch (dt) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
    case DType::Bool: return "bool";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
  }
  return "?";
}

DType parse_dtype(const std::string& name, const char* op) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Bool, DType::Float16,
                   DType::BFloat16})
    if (name == dtype_name(dt)) return dt;
  throw TypeError(cat(op, ": unsupported dtype '", name, "'; cuda lists ", dtype_list(kStored)));
}

std::size_t dtype_itemsize(DType dt) {
  switch (dt) {
    case DType::Float32: return 4;
    case DType::Bool: return 1;
    case DType::Float16:
    case DType::BFloat16: return 2;
    default: return 8;
  }
}

std::string dtype_list(DTypes set) {
  std::string names;
  for (DType dt : {DType::Float32, DType::Float64, DType::Int64, DType::Bool, DType::Float16,
                   DType::BFloat16})
    if (set & dtype_bit(dt)) names += (names.empty() ? "" : ", ") + std::string(dtype_name(dt));
  return names;
}

void require_same_dtype(const char* op, std::initializer_list<const Array*> arrays) {
  const Array* first = *arrays.begin();
  int i = 0;
  for (const Array* a : arrays) {
    if (a->dtype() != first->dtype())
      throw TypeError(cat(op, ": dtypes differ, ", first->dtype_str(), " (arg 0) and ",
                          a->dtype_str(), " (arg ", i, ")"));
    ++i;
  }
}

void require_dtype(const char* op, DType dt, DTypes set) {
  if (!(set & dtype_bit(dt)))
    throw TypeError(cat(op, ": dtype ", dtype_name(dt), " is not supported; this kernel takes ",
                        dtype_list(set)));
}

}  // namespace lamina_cuda
