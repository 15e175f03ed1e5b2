/* test_device_refusals.c: the device questions of axon.h (src/backend/
 * devices.c) and the plugin loader (backend.c) refuse what is not a device
 * or not a plugin with a message that names it, and write nothing then:
 * - a device set by hand: a backend name without its end, a negative
 *   number, a second CPU; a missing text buffer or properties struct;
 * - a plugin file that is not a library ($AXON_<NAME>_PLUGIN naming a text
 *   file): refused with the loader's own words, and refused the same way
 *   when asked again (the failure is kept, not retried); tables of the test
 *   plugin that name themselves otherwise or lack create: refused, naming
 *   why;
 * - the loader's table of plugins full (it keeps 8 names): the next name is
 *   refused as too many, and the names already asked for still answer;
 * - ax_device_from_number, the old numbering (-1 the CPU, N CUDA device N).
 * Independent of the build's device plugins: it asks only for names no
 * build has, and for the test plugin (AXON_TEST_PLUGIN). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/plugin.h"
#include "base/error.h"
#include "test_util.h"

static void test_hand_made_devices(void)
{
    ax_device_properties properties;
    char text[64];

    /* 16 letters and no '\0': the name has no end, and nothing reads past it. */
    ax_device endless;
    memset(endless.backend, 'x', sizeof endless.backend);
    endless.index = 0;
    CHECK_FAILS(ax_device_properties_get(endless, &properties), AX_STATUS_BAD_ARGUMENT,
                "a device's backend name has no end within 16 characters");
    strcpy(text, "untouched");
    CHECK_FAILS(ax_device_info(endless, text, sizeof text), AX_STATUS_BAD_ARGUMENT,
                "has no end within 16");
    CHECK(text[0] == '\0'); /* cleared, never half-written */
    ax_backend *backend = (ax_backend *)&properties;
    CHECK_FAILS(ax_backend_create(AX_PRECISION_F32, endless, &backend), AX_STATUS_BAD_ARGUMENT,
                "has no end within 16");
    CHECK(backend == NULL);

    const ax_device negative = {.backend = "nosuchdev", .index = -3};
    CHECK_FAILS(ax_device_properties_get(negative, &properties), AX_STATUS_BAD_ARGUMENT,
                "device nosuchdev:-3 is not a device: device numbers start at 0");

    const ax_device second_cpu = {.backend = "cpu", .index = 2};
    CHECK_FAILS(ax_device_info(second_cpu, text, sizeof text), AX_STATUS_BAD_ARGUMENT,
                "CPU device 2 is not a device: there is one CPU (index 0)");
    const ax_device unnamed_second_cpu = {.backend = "", .index = 1};
    CHECK_FAILS(ax_device_properties_get(unnamed_second_cpu, &properties),
                AX_STATUS_BAD_ARGUMENT, "CPU device 1 is not a device");
    /* The loader's own check, for callers that name the backend directly. */
    CHECK_FAILS(ax_backend_create_on("cpu", 1, AX_PRECISION_F64, &backend),
                AX_STATUS_BAD_ARGUMENT, "there is one CPU device, not 1");
    CHECK(backend == NULL);

    CHECK_FAILS(ax_device_info(ax_device_cpu(), NULL, 16), AX_STATUS_BAD_ARGUMENT,
                "ax_device_info needs a text buffer");
    strcpy(text, "untouched");
    CHECK_FAILS(ax_device_info(ax_device_cpu(), text, 0), AX_STATUS_BAD_ARGUMENT,
                "ax_device_info needs a text buffer");
    CHECK(strcmp(text, "untouched") == 0); /* capacity 0: not a byte written */
    CHECK_FAILS(ax_device_properties_get(ax_device_cpu(), NULL), AX_STATUS_BAD_ARGUMENT,
                "ax_device_properties_get needs somewhere to write");

    /* The good answers beside them, so the refusals above are not all there is. */
    CHECK_OK(ax_device_info(ax_device_cpu(), text, sizeof text));
    CHECK(strcmp(text, "the CPU") == 0);
}

static void test_plugin_not_a_library(void)
{
    /* This very source file: it exists, and it is no shared object. */
    const char *path = __FILE__;
    CHECK(access(path, R_OK) == 0);
    setenv("AXON_NOTALIB_PLUGIN", path, 1);
    const ax_device device = {.backend = "notalib", .index = 0};
    ax_backend *backend = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        CHECK_FAILS(ax_backend_create(AX_PRECISION_F32, device, &backend), AX_STATUS_UNSUPPORTED,
                    "the NOTALIB backend could not be loaded: ");
        CHECK(strstr(ax_error_message(), path) != NULL); /* dlerror names the file */
        CHECK(backend == NULL);
    }
    printf("refused: %s\n", ax_error_message());
    CHECK(ax_device_count("notalib") == 0);
    CHECK(ax_backend_runtime("notalib") == NULL);
    unsetenv("AXON_NOTALIB_PLUGIN");
}

/* Tables of the test plugin (plugin_fake.c) the loader must refuse, each by
 * what is wrong with it: a name other than its own, a missing entry point. */
static void test_plugin_tables_refused(void)
{
    static const struct {
        const char *variable, *name, *expected;
    } cases[] = {
        {"AXON_MISNAMED_PLUGIN", "misnamed", "names itself 'someone_else' or lacks its entry points"},
        {"AXON_HEADLESS_PLUGIN", "headless", "names itself 'headless' or lacks its entry points"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv(cases[i].variable, AXON_TEST_PLUGIN, 1);
        const ax_backend_plugin *plugin = NULL;
        CHECK_FAILS(ax_backend_plugin_get(cases[i].name, &plugin), AX_STATUS_UNSUPPORTED,
                    cases[i].expected);
        CHECK(plugin == NULL);
        CHECK(strstr(ax_error_message(), "rebuild it") != NULL);
        CHECK(!ax_backend_plugin_absent(cases[i].name)); /* there, but refused */
        unsetenv(cases[i].variable);
    }
}

/* The loader keeps the first 8 names asked for (each plugin opened once,
 * kept until exit); a 9th is refused as such, and the kept ones answer. */
static void test_plugin_table_full(void)
{
    const ax_backend_plugin *plugin = NULL;
    char name[32];
    int refused_as_absent = 0;
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "absent%d", i);
        const ax_status status = ax_backend_plugin_get(name, &plugin);
        CHECK(status == AX_STATUS_UNSUPPORTED);
        CHECK(plugin == NULL);
        if (strstr(ax_error_message(), "this build has no ABSENT"))
            refused_as_absent++;
        else
            CHECK(strcmp(ax_error_message(), "too many backend plugins asked for") == 0);
    }
    /* notalib, misnamed and headless (above) took three of the 8 places. */
    CHECK(refused_as_absent == 5);
    CHECK(strcmp(ax_error_message(), "too many backend plugins asked for") == 0);
    /* A name kept before the table filled is still answered with its own failure. */
    CHECK_FAILS(ax_backend_plugin_get("absent0", &plugin), AX_STATUS_UNSUPPORTED,
                "this build has no ABSENT0 backend");
    CHECK(ax_backend_plugin_absent("absent0"));
    CHECK(!ax_backend_plugin_absent("absent11")); /* never kept: nothing known of it */
    /* The CPU needs no place in the table. */
    ax_backend *backend = NULL;
    CHECK_OK(ax_backend_create(AX_PRECISION_F64, ax_device_cpu(), &backend));
    if (backend)
        backend->ops->destroy(backend);
}

static void test_old_numbering(void)
{
    CHECK(ax_device_is_cpu(ax_device_from_number(-1)));
    const ax_device cuda = ax_device_from_number(2);
    CHECK(strcmp(cuda.backend, "cuda") == 0 && cuda.index == 2);
    char text[32];
    ax_device_format(cuda, text, sizeof text);
    CHECK(strcmp(text, "cuda:2") == 0);
}

int main(void)
{
    test_hand_made_devices();
    test_plugin_not_a_library();
    test_plugin_tables_refused();
    test_plugin_table_full();
    test_old_numbering();
    return test_finish("test_device_refusals");
}
