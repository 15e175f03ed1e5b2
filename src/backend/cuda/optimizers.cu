/* optimizers.cu: the SGD (momentum, Nesterov) and Adam updates, one
 * elementwise pass over the parameter arena with PyTorch's semantics and
 * the CPU kernels' arithmetic (cpu_kernels.inc). */
#include <math.h>

#include "backend/cuda/cuda_kernels.cuh"

/* mode 0: plain SGD, 1: momentum, 2: Nesterov momentum. */
template <typename real, int mode>
__global__ void sgd_kernel(int64_t count, real *p, const real *g, real *v, real lr, real mu)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (mode == 0) {
            p[i] -= lr * g[i];
        } else {
            real velocity = mu * v[i] + g[i];
            v[i] = velocity;
            p[i] -= mode == 2 ? lr * (g[i] + mu * velocity) : lr * velocity;
        }
    }
}

template <typename real>
__global__ void adam_kernel(int64_t count, real *p, const real *g, real *m, real *v, real step_size,
                            real inverse_sqrt_c2, real b1, real b2, real eps)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        real gi = g[i];
        real mi = b1 * m[i] + ((real)1 - b1) * gi;
        real vi = b2 * v[i] + ((real)1 - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] -= step_size * mi / (ax_sqrt(vi) * inverse_sqrt_c2 + eps);
    }
}

extern "C" void ax_cuda_sgd_update(ax_backend *backend, int64_t count, void *params,
                                   const void *grads, void *velocity, double learning_rate,
                                   double momentum, bool nesterov)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    if (count <= 0)
        return;
    cudaSetDevice(cb->device);
    unsigned blocks = ax_cuda_elementwise_blocks(count);
    int mode = momentum == 0.0 ? 0 : nesterov ? 2 : 1;
    AX_CUDA_DISPATCH(backend, {
        real lr = (real)learning_rate, mu = (real)momentum;
        if (mode == 0)
            sgd_kernel<real, 0><<<blocks, AX_CUDA_THREADS, 0, cb->stream>>>(
                count, (real *)params, (const real *)grads, (real *)velocity, lr, mu);
        else if (mode == 1)
            sgd_kernel<real, 1><<<blocks, AX_CUDA_THREADS, 0, cb->stream>>>(
                count, (real *)params, (const real *)grads, (real *)velocity, lr, mu);
        else
            sgd_kernel<real, 2><<<blocks, AX_CUDA_THREADS, 0, cb->stream>>>(
                count, (real *)params, (const real *)grads, (real *)velocity, lr, mu);
    });
    AX_CUDA_LAUNCHED(cb, "sgd_update");
}

extern "C" void ax_cuda_adam_update(ax_backend *backend, int64_t count, void *params,
                                    const void *grads, void *first_moment, void *second_moment,
                                    double learning_rate, double beta1, double beta2,
                                    double epsilon, int64_t step)
{
    ax_cuda_backend *cb = ax_cuda(backend);
    if (count <= 0)
        return;
    cudaSetDevice(cb->device);
    /* torch.optim.Adam: p -= lr / (1 - b1^t) * m / (sqrt(v / (1 - b2^t)) + eps),
     * the corrections computed on the host in double as the CPU does. */
    const double correction1 = 1.0 - pow(beta1, (double)step);
    const double correction2 = 1.0 - pow(beta2, (double)step);
    const double step_size = learning_rate / correction1;
    const double inverse_sqrt_c2 = 1.0 / sqrt(correction2);
    AX_CUDA_DISPATCH(backend,
                     adam_kernel<real><<<ax_cuda_elementwise_blocks(count), AX_CUDA_THREADS, 0,
                                         cb->stream>>>(
                         count, (real *)params, (const real *)grads, (real *)first_moment,
                         (real *)second_moment, (real)step_size, (real)inverse_sqrt_c2,
                         (real)beta1, (real)beta2, (real)epsilon));
    AX_CUDA_LAUNCHED(cb, "adam_update");
}
