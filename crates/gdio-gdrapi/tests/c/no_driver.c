/* Links against libgdrapi.so.2 built by gdio-gdrapi and checks, on a machine without a
 * mapping backend, that every entry point answers with upstream's conventions. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gdrapi.h"

static int failures = 0;
#define CHECK(cond)                                                      \
    do {                                                                 \
        if (!(cond)) {                                                   \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                  \
        }                                                                \
    } while (0)

int main(void)
{
    int major = -1, minor = -1;
    gdr_runtime_get_version(&major, &minor);
    CHECK(major == GDR_API_MAJOR_VERSION && minor == GDR_API_MINOR_VERSION);

    /* Layout of the info struct as this compiler sees it. */
    CHECK(sizeof(gdr_info_v2_t) == 48);
    CHECK(offsetof(gdr_info_v2_t, mapping_type) == 40);
    CHECK(offsetof(gdr_info_v2_t, cycles_per_ms) == 32);

    const char *s = NULL;
    CHECK(gdr_get_mapping_type_string(GDR_MAPPING_TYPE_WC, &s) == 0 && s && strcmp(s, "Write Combining") == 0);
    CHECK(gdr_get_mapping_type_string(GDR_MAPPING_TYPE_DEVICE, &s) == 0 && strcmp(s, "Device") == 0);
    CHECK(gdr_get_mapping_type_string((gdr_mapping_type_t)42, &s) == EINVAL);

    gdr_t g = gdr_open();
    if (g != NULL) {
        printf("SKIP: a mapping backend is usable on this machine\n");
        CHECK(gdr_close(g) == 0);
        return failures ? 1 : 0;
    }
    printf("gdr_open() returned NULL as expected without a driver\n");

    gdr_t bogus = (gdr_t)(uintptr_t)0x1000;
    gdr_mh_t mh = { 12345 };
    gdr_mh_t out = { 0 };
    int v = 7;
    void *va = NULL;
    gdr_info_v2_t info;
    char buf[16] = "0123456789abcde";

    CHECK(gdr_close(NULL) == EINVAL);
    CHECK(gdr_close(bogus) == EINVAL);
    CHECK(gdr_pin_buffer(NULL, 0x10000, 65536, 0, 0, &out) == EINVAL);
    CHECK(gdr_pin_buffer_v2(bogus, 0x10000, 65536, GDR_PIN_FLAG_DEFAULT, &out) == EINVAL);
    CHECK(gdr_unpin_buffer(NULL, mh) == EINVAL);
    CHECK(gdr_get_callback_flag(NULL, mh, &v) == EINVAL);
    CHECK(gdr_get_info_v2(NULL, mh, &info) == EINVAL);
    CHECK(gdr_map(NULL, mh, &va, 65536) == EINVAL);
    CHECK(gdr_map_v2(bogus, mh, &va, 65536, GDR_MAP_FLAG_REQ_WC_MAPPING) == EINVAL);
    CHECK(gdr_unmap(NULL, mh, va, 65536) == EINVAL);
    CHECK(gdr_copy_to_mapping(mh, (void *)0x1000, buf, sizeof buf) == EINVAL);
    CHECK(gdr_copy_from_mapping(mh, buf, (const void *)0x1000, sizeof buf) == EINVAL);
    CHECK(gdr_driver_get_version(NULL, &major, &minor) == EINVAL);
    CHECK(gdr_get_attribute(NULL, GDR_ATTR_USE_PERSISTENT_MAPPING, &v) == EINVAL);
    CHECK(strcmp(buf, "0123456789abcde") == 0);

    if (failures == 0)
        printf("OK\n");
    return failures ? 1 : 0;
}
