/* gdrapi.h for gdio's libgdrapi.so.2: declarations of the GDRCopy 2.6 C API as implemented
 * by crates/gdio-gdrapi. Written for gdio; the names, types and values follow the public
 * GDRCopy 2.6 API so that programs built against it link and run unchanged. */
#ifndef GDIO_GDRAPI_H
#define GDIO_GDRAPI_H

#include <stddef.h>
#include <stdint.h>

#define MAJOR_VERSION_SHIFT 16
#define MINOR_VERSION_MASK (((uint32_t)1 << MAJOR_VERSION_SHIFT) - 1)
#define GDR_API_MAJOR_VERSION 2
#define GDR_API_MINOR_VERSION 6
#define GDR_API_VERSION ((GDR_API_MAJOR_VERSION << MAJOR_VERSION_SHIFT) | GDR_API_MINOR_VERSION)
#define MINIMUM_GDRDRV_MAJOR_VERSION 2
#define MINIMUM_GDRDRV_MINOR_VERSION 0
#define MINIMUM_GDRDRV_VERSION ((MINIMUM_GDRDRV_MAJOR_VERSION << MAJOR_VERSION_SHIFT) | MINIMUM_GDRDRV_MINOR_VERSION)

#define GPU_PAGE_SHIFT 16
#define GPU_PAGE_SIZE (1UL << GPU_PAGE_SHIFT)
#define GPU_PAGE_OFFSET (GPU_PAGE_SIZE - 1)
#define GPU_PAGE_MASK (~GPU_PAGE_OFFSET)

#ifdef __cplusplus
extern "C" {
#endif

struct gdr;
typedef struct gdr *gdr_t;

typedef struct gdr_mh_s {
    unsigned long h;
} gdr_mh_t;

typedef enum gdr_pin_flags {
    GDR_PIN_FLAG_DEFAULT = 0,
    GDR_PIN_FLAG_FORCE_PCIE = 1
} gdr_pin_flags_t;

typedef enum gdr_mapping_type {
    GDR_MAPPING_TYPE_NONE = 0,
    GDR_MAPPING_TYPE_WC = 1,
    GDR_MAPPING_TYPE_CACHING = 2,
    GDR_MAPPING_TYPE_DEVICE = 3
} gdr_mapping_type_t;

typedef enum gdr_map_flags {
    GDR_MAP_FLAG_DEFAULT = 0,
    GDR_MAP_FLAG_REQ_WC_MAPPING = 1,
    GDR_MAP_FLAG_REQ_CACHE_MAPPING = 2,
    GDR_MAP_FLAG_REQ_DEVICE_MAPPING = 3
} gdr_map_flags_t;

typedef enum gdr_attr {
    GDR_ATTR_USE_PERSISTENT_MAPPING = 1,
    GDR_ATTR_SUPPORT_PIN_FLAG_FORCE_PCIE = 2,
    GDR_ATTR_USING_DMA_BUF_MMAP = 3,
    GDR_ATTR_MAX
} gdr_attr_t;

typedef struct gdr_info_v2 {
    uint64_t va;          /* aligned start of the pinned range */
    uint64_t mapped_size; /* aligned length */
    uint32_t page_size;
    uint64_t tm_cycles;     /* deprecated */
    uint32_t cycles_per_ms; /* deprecated */
    unsigned mapped : 1;
    unsigned wc_mapping : 1;
    gdr_mapping_type_t mapping_type;
} gdr_info_v2_t;
typedef gdr_info_v2_t gdr_info_t;

gdr_t gdr_open(void);
int gdr_close(gdr_t g);
int gdr_pin_buffer(gdr_t g, unsigned long addr, size_t size, uint64_t p2p_token, uint32_t va_space, gdr_mh_t *handle);
int gdr_pin_buffer_v2(gdr_t g, unsigned long addr, size_t size, uint32_t flags, gdr_mh_t *handle);
int gdr_unpin_buffer(gdr_t g, gdr_mh_t handle);
int gdr_get_callback_flag(gdr_t g, gdr_mh_t handle, int *flag);
int gdr_get_info_v2(gdr_t g, gdr_mh_t handle, gdr_info_v2_t *info);
#define gdr_get_info gdr_get_info_v2
int gdr_map(gdr_t g, gdr_mh_t handle, void **va, size_t size);
int gdr_map_v2(gdr_t g, gdr_mh_t handle, void **va, size_t size, int flags);
int gdr_unmap(gdr_t g, gdr_mh_t handle, void *va, size_t size);
int gdr_copy_to_mapping(gdr_mh_t handle, void *map_d_ptr, const void *h_ptr, size_t size);
int gdr_copy_from_mapping(gdr_mh_t handle, void *h_ptr, const void *map_d_ptr, size_t size);
void gdr_runtime_get_version(int *major, int *minor);
int gdr_driver_get_version(gdr_t g, int *major, int *minor);
int gdr_get_attribute(gdr_t g, gdr_attr_t attr, int *v);
int gdr_get_mapping_type_string(gdr_mapping_type_t type, const char **pstr);

#ifdef __cplusplus
}
#endif

#endif
