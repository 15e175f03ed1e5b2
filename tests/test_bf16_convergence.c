/* test_bf16_convergence.c: bf16 training learns as float32 does. The
 * Fashion-MNIST MLP (784-128-128-10 ReLU, skipped when the Debian package
 * is not installed), Adam lr 1e-3, batch 128, 2 epochs, seeds 1-3,
 * in float32 and in bf16 with each kernel this CPU can run (the emulation
 * always, VDPBF16PS where the CPU has AVX512_BF16). Rounding the GEMM
 * operands to 8 bits moves each run's accuracy by a few tenths either way
 * (like changing the seed), so the test compares the mean over the three
 * seeds: within 0.75 points of float32's; and each run above 83 % (float32: 85-86.3 %).
 * The build moves the runs too: the same code gave -0.01 points (emulated) in
 * a Release build and -0.51 in the Debug sanitizer build (float32 alone moves
 * a seed by 0.35 points between them), so 0.5 points failed there. */
#include "test_util.h"
#include "test_datasets.h"

#include "backend/cpu/bf16_gemm.h"

static double train_mlp(ax_dataset *train, ax_dataset *test, ax_precision precision, uint64_t seed,
                       const char *what)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = 784;
    config.seed = seed;
    config.precision = precision;
    CHECK_OK(ax_layers_parse("128:relu,128:relu,10:softmax", &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config); /* the network keeps its own copy of the layers */
    if (!net)
        return 0.0;
    ax_train_config training = ax_train_defaults();
    training.optimizer = AX_OPTIMIZER_ADAM;
    training.learning_rate = 1e-3;
    training.batch_size = 128;
    training.epochs = 2;
    training.seed = seed;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_OK(ax_train(net, train, NULL, test, &training, &summary));
    printf("%-14s seed %llu: test accuracy %.2f %%, loss %.4f, %.2f s\n", what,
           (unsigned long long)seed, 100.0 * summary.final_test_accuracy,
           summary.final_train_loss, summary.seconds);
    ax_net_free(net);
    return summary.final_test_accuracy;
}

int main(void)
{
    ax_dataset *train = NULL, *test = NULL;
    if (!test_load_fashion_mnist(&train, &test))
        return test_finish("test_bf16_convergence");

    double f32 = 0.0;
    for (uint64_t seed = 1; seed <= 3; seed++)
        f32 += train_mlp(train, test, AX_PRECISION_F32, seed, "f32") / 3.0;
    const ax_bf16_kernel kernels[2] = {AX_BF16_KERNEL_EMULATED, AX_BF16_KERNEL_NATIVE};
    const char *names[2] = {"bf16 emulated", "bf16 VDPBF16PS"};
    for (int k = 0; k < (ax_bf16_cpu_has_instructions() ? 2 : 1); k++) {
        ax_bf16_gemm_force(kernels[k]);
        double bf16 = 0.0;
        for (uint64_t seed = 1; seed <= 3; seed++) {
            double accuracy = train_mlp(train, test, AX_PRECISION_BF16, seed, names[k]);
            CHECK(accuracy > 0.83);
            bf16 += accuracy / 3.0;
        }
        printf("mean test accuracy: f32 %.2f %%, %s %.2f %% (%+.2f points)\n", 100.0 * f32,
               names[k], 100.0 * bf16, 100.0 * (bf16 - f32));
        CHECK(fabs(bf16 - f32) <= 0.0075);
    }
    if (!ax_bf16_cpu_has_instructions())
        printf("VDPBF16PS not checked: this CPU has no AVX512_BF16\n");
    ax_bf16_gemm_force(AX_BF16_KERNEL_CHOSEN);

    ax_dataset_free(train);
    ax_dataset_free(test);
    return test_finish("test_bf16_convergence");
}
