// C = A * B for row-major n x n float32 matrices (the cpu-matmul task's candidate).
// A simple, correct starting point: cache-blocked i-k-j loops with a few rows of C at a time.
// The knob lines below can be tuned by `marathon run --policy search` (see tasks/README.md).
#include <algorithm>
#include <cstring>

constexpr int BLOCK_I = 32;  // marathon:knob [16, 32, 64, 128]
constexpr int BLOCK_K = 64;  // marathon:knob [16, 32, 64, 128, 256]
constexpr int BLOCK_J = 64;  // marathon:knob [32, 64, 128, 256, 512]
constexpr int UNROLL = 1;    // marathon:knob [1, 2, 4]

// C[i0:i0+R, j0:j1] += A[i0:i0+R, k0:k1] * B[k0:k1, j0:j1], R rows at once so each B row loaded
// from cache is used R times.
template <int R>
static void block_rows(const float* A, const float* B, float* C, int n, int i0, int k0, int k1,
                       int j0, int j1) {
  for (int k = k0; k < k1; ++k) {
    const float* b = B + static_cast<long>(k) * n;
    float a[R];
    for (int r = 0; r < R; ++r) a[r] = A[static_cast<long>(i0 + r) * n + k];
    for (int r = 0; r < R; ++r) {
      float* c = C + static_cast<long>(i0 + r) * n;
      for (int j = j0; j < j1; ++j) c[j] += a[r] * b[j];
    }
  }
}

void matmul(const float* A, const float* B, float* C, int n) {
  std::memset(C, 0, sizeof(float) * static_cast<size_t>(n) * n);
  for (int ii = 0; ii < n; ii += BLOCK_I) {
    const int i1 = std::min(ii + BLOCK_I, n);
    for (int kk = 0; kk < n; kk += BLOCK_K) {
      const int k1 = std::min(kk + BLOCK_K, n);
      for (int jj = 0; jj < n; jj += BLOCK_J) {
        const int j1 = std::min(jj + BLOCK_J, n);
        int i = ii;
        for (; i + UNROLL <= i1; i += UNROLL) block_rows<UNROLL>(A, B, C, n, i, kk, k1, jj, j1);
        for (; i < i1; ++i) block_rows<1>(A, B, C, n, i, kk, k1, jj, j1);
      }
    }
  }
}
