/* test_onnx_export.c: the ONNX writer's parts that Python's checker does not
 * see (python/tests/test_onnx.py runs the files themselves):
 * - the protobuf encoder gives the wire format's documented bytes (the
 *   encoding guide's examples: 150 as 08 96 01, "testing", a nested
 *   message) and a nested message of 128 bytes or more gets its 2-byte
 *   length in front with its contents intact;
 * - an exported file starts with the IR version and holds the weights'
 *   float32 bytes little-endian;
 * - the refusals: an unwritable path (missing folder, a folder) fails naming
 *   it and leaves no temporary; a kind of layer the writer does not know,
 *   an image layer after plain features, missing weights and weights over
 *   2 GiB are AX_STATUS_UNSUPPORTED / BAD_ARGUMENT naming the layer, and a
 *   failed export leaves an existing file as it was. */
#include "test_util.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/net.h"
#include "io/onnx.h"
#include "io/protobuf.h"

static char folder[] = "/tmp/axon_onnx_test_XXXXXX";

static bool bytes_are(const ax_pb_buffer *buffer, const unsigned char *expected, size_t size)
{
    return buffer->size == size && memcmp(buffer->bytes, expected, size) == 0;
}

static void test_protobuf_encodings(void)
{
    ax_pb_buffer b = ax_pb_init();
    ax_pb_varint(&b, 1, 150);
    const unsigned char varint[] = {0x08, 0x96, 0x01};
    CHECK(bytes_are(&b, varint, sizeof varint));
    ax_pb_free(&b);

    ax_pb_string(&b, 2, "testing");
    const unsigned char string[] = {0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'};
    CHECK(bytes_are(&b, string, sizeof string));
    ax_pb_free(&b);

    ax_pb_mark mark = ax_pb_begin(&b, 3);
    ax_pb_varint(&b, 1, 150);
    ax_pb_end(&b, mark);
    const unsigned char nested[] = {0x1a, 0x03, 0x08, 0x96, 0x01};
    CHECK(bytes_are(&b, nested, sizeof nested));
    ax_pb_free(&b);

    ax_pb_varint(&b, 2, (uint64_t)(int64_t)-1); /* int64 -1: ten bytes */
    const unsigned char minus_one[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0xff,
                                       0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK(bytes_are(&b, minus_one, sizeof minus_one));
    ax_pb_free(&b);

    ax_pb_float(&b, 2, 1.0f);
    const float values[2] = {1.0f, -2.0f};
    ax_pb_float_bytes(&b, 9, values, 2);
    const unsigned char floats[] = {0x15, 0x00, 0x00, 0x80, 0x3f, 0x4a, 0x08, 0x00, 0x00,
                                    0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0};
    CHECK(bytes_are(&b, floats, sizeof floats));
    ax_pb_free(&b);

    /* 200 bytes of contents: length 200 = c8 01, the contents moved up intact */
    unsigned char payload[197];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (unsigned char)(i * 7);
    ax_pb_varint(&b, 1, 1);
    mark = ax_pb_begin(&b, 7);
    ax_pb_bytes(&b, 4, payload, sizeof payload); /* tag, length 197 (c5 01), payload */
    ax_pb_end(&b, mark);
    CHECK(b.size == 2 + 1 + 2 + 1 + 2 + sizeof payload);
    const unsigned char head[] = {0x08, 0x01, 0x3a, 0xc8, 0x01, 0x22, 0xc5, 0x01};
    CHECK(b.size > sizeof head && memcmp(b.bytes, head, sizeof head) == 0);
    CHECK(b.size > sizeof head && memcmp(b.bytes + sizeof head, payload, sizeof payload) == 0);
    CHECK(!ax_pb_failed(&b));
    ax_pb_free(&b);
}

static ax_net *make_net(const char *layout, int64_t inputs)
{
    ax_net_config config = ax_net_defaults();
    config.input_width = inputs;
    config.seed = 5;
    CHECK_OK(ax_layers_parse(layout, &config));
    ax_net *net = NULL;
    CHECK_OK(ax_net_create(&config, &net));
    ax_net_config_release(&config);
    return net;
}

static unsigned char *read_file(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return NULL;
    fseek(file, 0, SEEK_END);
    long length = ftell(file);
    fseek(file, 0, SEEK_SET);
    unsigned char *bytes = malloc((size_t)length + 1);
    *size = fread(bytes, 1, (size_t)length, file);
    fclose(file);
    return bytes;
}

static bool contains(const unsigned char *bytes, size_t size, const void *part, size_t length)
{
    for (size_t i = 0; i + length <= size; i++)
        if (memcmp(bytes + i, part, length) == 0)
            return true;
    return false;
}

/* Files in the test's folder, temporaries included. */
static int files_in_folder(void)
{
    DIR *dir = opendir(folder);
    int count = 0;
    for (struct dirent *entry; dir && (entry = readdir(dir));)
        count += entry->d_name[0] != '.';
    if (dir)
        closedir(dir);
    return count;
}

static void test_export_holds_the_weights(void)
{
    ax_net *net = make_net("5:relu,3:softmax", 4);
    char path[256];
    snprintf(path, sizeof path, "%s/dense.onnx", folder);
    CHECK_OK(ax_net_export_onnx(net, path));
    size_t size = 0;
    unsigned char *bytes = read_file(path, &size);
    CHECK(bytes && size > 2 && bytes[0] == 0x08 && bytes[1] == AX_ONNX_IR_VERSION);
    double values[5 * 4 + 5 + 3 * 5 + 3];
    CHECK(ax_net_parameter_count(net) == (int64_t)(sizeof values / sizeof *values));
    ax_net_parameters_get(net, values);
    unsigned char first_weights[4 * 4]; /* row 0 of layer 0's W, little-endian float32 */
    for (int i = 0; i < 4; i++) {
        float value = (float)values[i];
        uint32_t bits;
        memcpy(&bits, &value, 4);
        for (int k = 0; k < 4; k++)
            first_weights[4 * i + k] = (unsigned char)(bits >> (8 * k));
    }
    CHECK(bytes && contains(bytes, size, first_weights, sizeof first_weights));
    CHECK(bytes && contains(bytes, size, "layers.1.weight", 15));
    CHECK(bytes && contains(bytes, size, "Softmax", 7));
    free(bytes);
    unlink(path);
    ax_net_free(net);
}

static void test_refusals(void)
{
    ax_net *net = make_net("5:relu,3:softmax", 4);
    char path[512];
    snprintf(path, sizeof path, "%s/no_such_folder/m.onnx", folder);
    CHECK_FAILS(ax_net_export_onnx(net, path), AX_STATUS_IO_ERROR, "no_such_folder/m.onnx");
    CHECK_FAILS(ax_net_export_onnx(net, folder), AX_STATUS_BAD_ARGUMENT, "is a folder");
    CHECK(files_in_folder() == 0);

    /* An existing file stays as it was when the export fails. */
    snprintf(path, sizeof path, "%s/old.onnx", folder);
    FILE *old = fopen(path, "w");
    fputs("old", old);
    fclose(old);
    const ax_layer_kind kind = net->layers[1].spec.kind;
    net->layers[1].spec.kind = (ax_layer_kind)42; /* a kind from a future axon */
    CHECK_FAILS(ax_net_export_onnx(net, path), AX_STATUS_UNSUPPORTED, "layer 2");
    net->layers[1].spec.kind = kind;
    size_t size = 0;
    unsigned char *bytes = read_file(path, &size);
    CHECK(bytes && size == 3 && memcmp(bytes, "old", 3) == 0);
    free(bytes);
    CHECK(files_in_folder() == 1);
    unlink(path);
    ax_net_free(net);

    /* The writer's own checks, on descriptions the core would not make. */
    float weights[8] = {0};
    ax_onnx_layer layers[2] = {
        {.spec = ax_layer_dense(2, AX_ACT_RELU), .activation = AX_ACT_RELU,
         .in_shape = {1, 1, 2}, .weight = weights, .bias = weights},
        {.spec = ax_layer_pool(AX_LAYER_MAX_POOL, 2, 2), .in_shape = {1, 1, 2}},
    };
    ax_onnx_model model = {.input_shape = {1, 1, 2}, .output_width = 2, .layers = layers,
                           .layer_count = 2};
    snprintf(path, sizeof path, "%s/w.onnx", folder);
    CHECK_FAILS(ax_onnx_write(path, &model), AX_STATUS_UNSUPPORTED, "layer 2 (a pooling) has no image input");
    model.layer_count = 1;
    layers[0].bias = NULL;
    CHECK_FAILS(ax_onnx_write(path, &model), AX_STATUS_BAD_ARGUMENT, "layer 1: no weights");
    layers[0].bias = weights;
    layers[0].activation = (ax_activation)9;
    CHECK_FAILS(ax_onnx_write(path, &model), AX_STATUS_UNSUPPORTED, "activation 9");
    layers[0].activation = AX_ACT_RELU;
    layers[0].spec = ax_layer_dense(1 << 20, AX_ACT_RELU); /* 2^20 x 2^10 floats: 4 GiB */
    layers[0].in_shape[2] = 1 << 10;
    CHECK_FAILS(ax_onnx_write(path, &model), AX_STATUS_UNSUPPORTED, "2 GiB");
    CHECK(files_in_folder() == 0);
}

int main(void)
{
    if (!mkdtemp(folder)) {
        perror("mkdtemp");
        return 1;
    }
    test_protobuf_encodings();
    test_export_holds_the_weights();
    test_refusals();
    rmdir(folder);
    return test_finish("test_onnx_export");
}
