// A CUDA program of known content, for tests/gpu/device.sh: N launches of
// kern_a on stream 1, N of kern_b on stream 2 (concurrent with stream 1), a
// copy of B bytes each way, one memset; then a device synchronisation.
#include <cstdio>
#include <cstdlib>
__global__ void kern_a(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; for (int k = 0; k < 2000; k++) if (i < n) x[i] = x[i] * 0.999f + 1.0f; }
__global__ void kern_b(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; for (int k = 0; k < 2000; k++) if (i < n) x[i] = x[i] * 0.998f + 2.0f; }
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100, len = 1 << 16;
	size_t bytes = argc > 2 ? strtoull(argv[2], 0, 10) : (64u << 20);
	float *a, *b, *big, *host = (float *)malloc(bytes);
	cudaStream_t s1, s2;
	cudaStreamCreate(&s1); cudaStreamCreate(&s2);
	cudaMalloc(&a, len * 4); cudaMalloc(&b, len * 4); cudaMalloc(&big, bytes);
	cudaMemset(a, 0, len * 4);
	for (int i = 0; i < n; i++) {
		kern_a<<<len / 256, 256, 0, s1>>>(a, len);
		kern_b<<<len / 256, 256, 0, s2>>>(b, len);
	}
	cudaMemcpy(big, host, bytes, cudaMemcpyHostToDevice);
	cudaMemcpy(host, big, bytes, cudaMemcpyDeviceToHost);
	cudaDeviceSynchronize();
	printf("launches %d each, copies %zu bytes each way\n", n, bytes);
	return 0;
}
