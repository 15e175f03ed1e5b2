// conv_onednn.cpp: oneDNN 2.6's convolutions (Debian's libdnnl-dev, what
// PyTorch's CPU convolutions use) at the LeNet benchmark's shapes, for
// docs/notes/conv.md: forward, backward data and backward weights (with
// bias), src and dst in axon's NHWC layout, weights in the layout oneDNN
// prefers (format any: the reorders of weights are left out, in oneDNN's
// favour). The minimum of 15 timings after a warm-up, 1 and 2 threads
// (OMP_NUM_THREADS is read once: run it twice), as dev/conv_bench.c prints
// axon's parts. build and run: dev/conv_bench.sh
#include <chrono>
#include <cstdio>
#include <dnnl.hpp>
#include <vector>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

template <class F> static double best_ms(F call)
{
    call();
    double best = 1e30;
    for (int r = 0; r < 15; r++) {
        auto start = std::chrono::steady_clock::now();
        call();
        double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        best = t < best ? t : best;
    }
    return best;
}

static void layer(const char *name, int h, int w, int c, int f, int k, int n)
{
    engine eng(engine::kind::cpu, 0);
    stream s(eng);
    const int oh = h - k + 1, ow = w - k + 1;
    memory::dims src_dims = {n, c, h, w}, wei_dims = {f, c, k, k}, bias_dims = {f},
                 dst_dims = {n, f, oh, ow}, strides = {1, 1}, pad = {0, 0};
    auto src_md = memory::desc(src_dims, dt::f32, tag::nhwc);
    auto dst_md = memory::desc(dst_dims, dt::f32, tag::nhwc);
    auto wei_any = memory::desc(wei_dims, dt::f32, tag::any);
    auto bias_md = memory::desc(bias_dims, dt::f32, tag::x);
    auto fwd_pd = convolution_forward::primitive_desc(
        convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, src_md,
                                  wei_any, bias_md, dst_md, strides, pad, pad),
        eng);
    auto bwd_data_pd = convolution_backward_data::primitive_desc(
        convolution_backward_data::desc(algorithm::convolution_direct, src_md, wei_any, dst_md,
                                        strides, pad, pad),
        eng, fwd_pd);
    auto bwd_wei_pd = convolution_backward_weights::primitive_desc(
        convolution_backward_weights::desc(algorithm::convolution_direct, src_md, wei_any, bias_md,
                                           dst_md, strides, pad, pad),
        eng, fwd_pd);
    memory src(src_md, eng), dst(dst_md, eng), bias(bias_md, eng);
    memory wei(fwd_pd.weights_desc(), eng), diff_src(src_md, eng), diff_dst(dst_md, eng);
    memory wei_bwd(bwd_data_pd.weights_desc(), eng), diff_wei(bwd_wei_pd.diff_weights_desc(), eng);
    memory diff_bias(bias_md, eng);
    for (memory *m : {&src, &dst, &diff_dst, &wei, &wei_bwd}) {
        float *p = static_cast<float *>(m->get_data_handle());
        for (size_t i = 0; i < m->get_desc().get_size() / sizeof(float); i++)
            p[i] = (float)(i % 13) * 0.01f;
    }
    convolution_forward fwd(fwd_pd);
    convolution_backward_data bwd_data(bwd_data_pd);
    convolution_backward_weights bwd_wei(bwd_wei_pd);
    const double flops = 2.0 * n * oh * ow * (double)f * c * k * k;
    double t_fwd = best_ms([&] {
        fwd.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, bias},
                        {DNNL_ARG_DST, dst}});
        s.wait();
    });
    double t_data = best_ms([&] {
        bwd_data.execute(s, {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_WEIGHTS, wei_bwd},
                             {DNNL_ARG_DIFF_SRC, diff_src}});
        s.wait();
    });
    double t_wei = best_ms([&] {
        bwd_wei.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst},
                            {DNNL_ARG_DIFF_WEIGHTS, diff_wei}, {DNNL_ARG_DIFF_BIAS, diff_bias}});
        s.wait();
    });
    printf("%s oneDNN (%s): forward %.3f ms (%.1f GFLOP/s), backward data %.3f ms, backward "
           "weights %.3f ms\n",
           name, fwd_pd.impl_info_str(), t_fwd, flops / t_fwd * 1e-6, t_data, t_wei);
}

int main()
{
    layer("conv1", 28, 28, 1, 32, 5, 128);
    layer("conv2", 12, 12, 32, 64, 5, 128);
    return 0;
}
