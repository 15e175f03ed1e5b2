/* test_config_size.c: the versioned structs (axon.h, "versioned structs";
 * docs/design.md, "The ABI rule"). _init fills exactly the bytes it is
 * given (a larger caller's tail zeroed, a smaller one's end untouched); a
 * size from a newer header or below the first version is refused with a
 * message naming the _defaults() function. (Sizes below this first
 * version's are refused too: older headers with a size field do not exist
 * yet; when a field is added, a test that the previous size trains as the
 * defaults do belongs here.) */
#include <stddef.h>

#include "test_util.h"
#include "test_datasets.h"

static void check_init_bounds(void)
{
    unsigned char bytes[sizeof(ax_train_config) + 16];
    memset(bytes, 0xab, sizeof bytes);
    const size_t short_size = offsetof(ax_train_config, keep_checkpoints);
    ax_train_config_init((ax_train_config *)bytes, short_size);
    ax_train_config shorter;
    memcpy(&shorter, bytes, sizeof shorter);
    CHECK(shorter.size == short_size);
    CHECK(shorter.learning_rate == 0.1 && shorter.epochs == 10);
    CHECK(bytes[short_size] == 0xab); /* nothing written past the caller's size */

    memset(bytes, 0xab, sizeof bytes);
    ax_train_config_init((ax_train_config *)bytes, sizeof bytes);
    CHECK(bytes[sizeof bytes - 1] == 0); /* a newer caller's tail: zero */
}

static void check_refused(void)
{
    ax_dataset *train = test_uniform_dataset(40, 4, 1, true);
    ax_net_config net_config = ax_net_defaults();
    CHECK_OK(ax_layers_parse("3:softmax", &net_config));
    net_config.input_width = 4;
    ax_net *net = NULL;
    net_config.size = sizeof net_config + 8;
    CHECK_FAILS(ax_net_create(&net_config, &net), AX_STATUS_BAD_ARGUMENT,
                "fill it with ax_net_defaults()");
    net_config.size = 0;
    CHECK_FAILS(ax_net_create(&net_config, &net), AX_STATUS_BAD_ARGUMENT, "a network config of 0 bytes");
    net_config.size = sizeof net_config;
    CHECK_OK(ax_net_create(&net_config, &net));
    ax_train_config config = ax_train_defaults();
    config.size = sizeof config + 8;
    ax_train_summary summary = ax_train_summary_empty();
    CHECK_FAILS(ax_train(net, train, NULL, NULL, &config, &summary), AX_STATUS_BAD_ARGUMENT,
                "fill it with ax_train_defaults()");
    ax_prep_options prep = ax_prep_defaults();
    prep.size = 1;
    CHECK_FAILS(ax_prep_run(&prep, NULL, NULL, NULL), AX_STATUS_BAD_ARGUMENT,
                "fill it with ax_prep_defaults()");
    ax_net_free(net);
    ax_net_config_release(&net_config);
    ax_dataset_free(train);
}

int main(void)
{
    check_init_bounds();
    check_refused();
    return test_finish("test_config_size");
}
