/* net.h: the network object, a sequence of layers (core/layer.h), each a
 * kind, its settings and a view into the arenas. All parameters live in one
 * backend allocation (the arena), layer after layer (a dense layer's block
 * is [W (out, in) row-major, b (out)]); the gradient arena has the same
 * layout, so optimizers are flat loops over `parameter_count` reals (as
 * llm.c). Activations live in a workspace sized once for the largest batch,
 * so training allocates nothing per step. */
#ifndef AX_CORE_NET_H
#define AX_CORE_NET_H

#include "axon.h"
#include "backend/backend.h"
#include "core/layer.h"
#include "perf/profile.h"

/* The buffers a pass works in, sized once for the largest batch
 * (ax_net_reserve) so that training allocates nothing per step, and which
 * batch they hold. Not part of the model: a network saved, loaded or
 * copied has the same weights whatever its workspace held. */
typedef struct ax_net_workspace {
    int64_t capacity;                /* rows it holds (ax_net_reserve) */
    void *input;                     /* (capacity, input_width) copy, when needed */
    const void *current_input;       /* the loaded batch: input, or a view of the data set */
    /* Which rows `input` holds, so that a full batch in row order is not
     * copied again at every step (float64, or a device: 22 MB converted per
     * CG step of the galaxy classifier 1024-8-3 in float64).
     * Reused only while ax_train runs:
     * afterwards a freed data set's address may come back for another. */
    bool reuse_loaded, loaded_valid;
    const float *loaded_features;
    int64_t loaded_first, loaded_count;
    /* Other rows loaded meanwhile (the test set evaluated after each step)
     * go here, so that they do not push the kept batch out of `input`:
     * (side_rows, input_width), grown on demand. */
    void *side_input;
    int64_t side_rows;
    void *outputs[AX_MAX_LAYERS];    /* (capacity, out_l): activated outputs */
    void *delta[2];                  /* (capacity, max_width) ping-pong; max_width = widest layer */
    void *targets;                   /* (capacity, output width) for regression */
    void *scratch;                   /* (scratch_reals): what layers' passes need
                                        (ax_layer_ops.scratch_reals), for capacity rows */
    int64_t scratch_reals;
    int32_t *labels;                 /* (capacity) backend memory */
    bool batch_has_labels;           /* the loaded answers are labels, not targets */
    int32_t *predicted;              /* (capacity) host memory */
    /* The first layer's max-pooling window codes (backend.h:
     * conv_forward_relu_max_pool), grown on demand to codes_rows rows; valid
     * while the first layer's output is the one they were made with (its
     * other forward pass clears it). */
    uint8_t *pool_codes;
    int64_t pool_codes_rows;
    bool pool_codes_valid;
} ax_net_workspace;

/* What a run attaches to the network while it trains or measures: none of
 * it is the model, and each part is set and cleared by its owner. */
typedef struct ax_net_run {
    /* The training run's data sets in backend memory (core/device_data.h),
     * while ax_train runs on a backend that can hold them; else NULL. */
    struct ax_device_data *device_data;
    int64_t device_batches;          /* batches gathered on the device (for tests) */
    int64_t device_losses;           /* steps whose loss stayed on the device (for tests) */
    char data_placement[200];        /* where the last run's data sets were, and why */

    ax_profile *profile;             /* NULL unless profiling is on */
    /* Called by the backward pass as soon as layer l's gradient (weights
     * and bias) is complete, last layer first: data-parallel training
     * starts summing it over the ranks while the pass goes on
     * (src/parallel/replicas.c). NULL = none. */
    void (*gradient_ready)(void *user, int layer);
    void *gradient_ready_user;
} ax_net_run;

/* The model (its configuration, layers and parameter arena, with the
 * gradient arena of the same layout), then what passes and runs use. */
struct ax_net {
    ax_net_config config; /* loss and init resolved */
    ax_backend *backend;
    ax_layer *layers;     /* layer_count, input to output */
    ax_layer_spec *specs; /* layer_count, the net's copy (config.layers points here) */
    int layer_count;
    int64_t parameter_count;
    int64_t max_width;
    void *parameters; /* arena (parameter_count) */
    void *gradients;  /* same layout */

    ax_net_workspace workspace; /* owned: freed with the net */
    ax_net_run run;
};

/* Runs call, timed into the network's profile as (kind, layer) with flops
 * when profiling is on. The backend is synchronised around the call so that
 * asynchronous backends are timed for their work, not for queuing it. */
#define AX_PROFILED(net, kind, layer, flops, call) \
    AX_PROFILED_WHEN(net, kind, layer, flops, true, call)

/* The same, recorded only if `taken` holds after the call: for an entry
 * that may decline, so that a declined call counts as no call at all. */
#define AX_PROFILED_WHEN(net, kind, layer, flops, taken, call)                    \
    do {                                                                          \
        ax_profile *profile_ = (net)->run.profile;                                    \
        if (!profile_) {                                                          \
            call;                                                                 \
            break;                                                                \
        }                                                                         \
        /* A failure stays in the backend's status, which the pass checks. */     \
        (void)ax_backend_synchronize((net)->backend);                             \
        double profile_start_ = ax_seconds_now();                                 \
        call;                                                                     \
        (void)ax_backend_synchronize((net)->backend);                             \
        if (taken)                                                                \
            ax_profile_record(profile_, (kind), (layer), profile_start_, (flops)); \
    } while (0)

/* Pointers to a layer's block, weights and bias inside an arena. */
void *ax_layer_block(const ax_net *net, void *arena, int layer);
void *ax_layer_weights(const ax_net *net, void *arena, int layer);
void *ax_layer_bias(const ax_net *net, void *arena, int layer);

/* Rows per forward pass of predict, evaluate and layer activations: as
 * many as keep the workspace's rows within AX_INFERENCE_BYTES, at most
 * AX_INFERENCE_ROWS and at most `rows`, a function of the layout and `rows`
 * alone. Not the workspace's capacity (the training batch of a trained net,
 * 0 for a loaded one): a BLAS may pick its kernels, and so the order of a
 * row's sums, by the GEMM's shape (OpenBLAS's AVX-512 kernels do:
 * small-matrix, direct and packed paths chosen by M N K), so a chunk that
 * followed the net's history gave a trained net and the same weights loaded
 * afresh different bits for the same rows (issue 25, on a Zen 5). The byte
 * bound keeps a wide network (a convolution's images) from growing its
 * training workspace many times over at its first evaluation. */
#define AX_INFERENCE_ROWS INT64_C(4096)
#define AX_INFERENCE_BYTES ((size_t)64 << 20)
/* On a device (a backend without host memory) neither bound is a cache to
 * stay within, and every chunk costs a dozen or more kernel launches: a
 * chunk there is as many rows as fit 512 MiB of workspace (60,000 rows of
 * the Fashion-MNIST MLP, so a full batch is one pass of large GEMMs). */
#define AX_DEVICE_CHUNK_BYTES ((size_t)512 << 20)
int64_t ax_net_inference_rows(const ax_net *net, int64_t rows);

/* The workspace (net_workspace.c). ax_net_reserve (axon.h) makes it hold
 * at least rows rows (allocating only when it grows), for batches of rows
 * taken in order; _shuffled the same, for batches that may be shuffled (an
 * order array). _release frees its buffers (capacity 0). */
ax_status ax_net_reserve(ax_net *net, int64_t rows);
ax_status ax_net_reserve_shuffled(ax_net *net, int64_t rows, bool shuffled);
void ax_net_workspace_release(ax_net *net);

/* The rows of a dataset a pass works on: rows order[first + r] (or first + r
 * when order is NULL), r < count. */
typedef struct ax_batch {
    const ax_dataset *data;
    const int64_t *order;
    int64_t first;
    int64_t count;
} ax_batch;

/* Copies a batch's inputs (and labels/targets) into the workspace. */
void ax_net_load_batch(ax_net *net, const ax_batch *batch, bool with_answers);
/* Makes rows order[first + r] (first + r without an order), r < count, of
 * the (rows, input width) float32 features the pass's input: read where
 * they lie, or gathered into the workspace (net_workspace.c). For a sparse
 * set (sparse not NULL) features are its values, whose address tells which
 * set's rows are loaded, and the rows are made dense in the workspace. */
void ax_net_load_inputs(ax_net *net, const float *features, const ax_dataset *sparse,
                        const int64_t *order, int64_t first, int64_t count);
/* Whether the workspace's side input has room for count rows, growing it if
 * not. A buffer that cannot grow stays as it was (what an evaluation could
 * not have, the next training step's input dropout still has). */
bool ax_net_side_input_holds(ax_net *net, int64_t count);
/* While keep is on (ax_train), a batch of rows in order stays in the
 * workspace and is not loaded again when asked for again; other rows in
 * order go to a side buffer. Off frees that buffer and forgets the batch. */
void ax_net_keep_loaded_batch(ax_net *net, bool keep);
/* Forward pass over the workspace input; dropout on hidden layers when
 * regularization is non-NULL and its rate > 0. Fails only with input
 * dropout, when the copy of the inputs it drops cannot be allocated
 * (AX_STATUS_OUT_OF_MEMORY); without it, it always succeeds. */
ax_status ax_net_forward(ax_net *net, int64_t rows, const ax_regularization *regularization);
/* Loss of the last forward pass (mean data loss + L2 term) and, when
 * with_gradient, the gradient arena. */
double ax_net_backward(ax_net *net, int64_t rows, const ax_regularization *regularization,
                       bool with_gradient);
/* Full-batch loss and gradient over all rows of data, `chunk` rows at a
 * time, so that the workspace (reserved for `chunk` rows) holds one chunk
 * rather than the whole data set; accumulator is a gradient-shaped backend
 * array. Equals one forward and backward pass over all rows up to rounding. */
double ax_net_chunked_loss_gradient(ax_net *net, const ax_dataset *data, int64_t chunk,
                                    const ax_regularization *regularization, void *accumulator);
/* The factor that turns the output loss's sum over `rows` rows into the
 * mean ax_net_backward returns (1/rows, or 1/(rows outputs) for MSE). */
double ax_net_loss_scale(const ax_net *net, int64_t rows);
/* Mean data loss only (no gradient, no regularisation) of the last forward pass. */
double ax_net_data_loss(ax_net *net, int64_t rows);
/* The L2 penalty l2/2 * (sum of squared weights) of the current weights,
 * the term the losses above add when regularizing. */
double ax_net_l2_penalty(ax_net *net, double l2);
/* The reductions of that penalty, one w.w per layer into dots (room for
 * AX_MAX_LAYERS), for a caller that reads them with others in one wait;
 * returns how many. ax_net_l2_from_dots then gives ax_net_l2_penalty's bits. */
int ax_net_l2_dots(const ax_net *net, ax_reduction *dots);
double ax_net_l2_from_dots(const ax_net *net, double l2, const ax_reduction *dots);
/* The L1 penalty l1 * (sum of absolute weights) of the current weights
 * (the backend's l1_penalty: AX_BACKEND_FEATURE_STRATEGIES). */
double ax_net_l1_penalty(ax_net *net, double l1);
/* AX_STATUS_UNSUPPORTED, naming the entries, when l1 > 0 and the backend
 * lacks l1_penalty. */
ax_status ax_net_check_l1(const ax_net *net, double l1);

/* The forward pass from layer `first` on, whose input (layer first - 1's
 * outputs) is in the workspace already. */
ax_status ax_net_forward_from(ax_net *net, int64_t rows, const ax_regularization *regularization,
                              int first); /* the status: as ax_net_forward */
/* ax_net_backward with the gradient, less the first layer's weight gradient
 * (its one pass over the inputs); the first layer's delta (rows, width) is
 * left in delta[(layer_count - 1) % 2]. Returns the mean data loss alone:
 * the caller adds the penalties (l2, then l1), reading the L2 penalty's dots
 * with its own. */
double ax_net_backward_along(ax_net *net, int64_t rows, const ax_regularization *regularization);

/* Line searches (CG, L-BFGS) along a direction d over the loaded full batch
 * (propagate_along.c), for a network whose first layer declares its outputs
 * linear in its weights (ax_layer_ops.linear_product; ax_net_line_cache_fits).
 * The first layer's pre-activations are then affine in the step, X (W + a D)^T = X W^T + a X D^T: with the two (rows, width)
 * products kept, a trial step costs no pass over the inputs X, and neither
 * does its slope, gradient . d, which needs only delta . X D^T for the first
 * layer's weights. Only the gradient at a point the search accepts reads X
 * (X^T delta), and so does X D^T for each new direction; X W^T at the
 * accepted point is X W^T + a X D^T, kept for the next search. */
typedef struct ax_line_cache ax_line_cache;
/* Whether the first layer offers what the cache needs. */
bool ax_net_line_cache_fits(const ax_net *net);
/* A cache for batches of `rows` rows; no dropout (a line search needs a
 * deterministic cost). */
ax_status ax_line_cache_create(ax_net *net, int64_t rows, ax_line_cache **out);
void ax_line_cache_free(ax_line_cache *cache);
/* The parameters changed other than along a search: forget X W^T. */
void ax_line_cache_invalidate(ax_line_cache *cache);
/* A search from the parameters (x0) along direction (parameter-shaped). */
void ax_net_line_begin(ax_net *net, ax_line_cache *cache, const void *direction);
/* With the parameters at x0 + alpha d: the loss; *slope = gradient . d; with
 * with_gradient the gradient arena too (without it the first layer's weight
 * gradient is left stale). Calling again at the same alpha reuses the pass. */
double ax_net_line_evaluate(ax_net *net, ax_line_cache *cache, double alpha, bool with_gradient,
                            const ax_regularization *regularization, double *slope);
/* The search ended with the parameters at x0 + alpha d (0: back at x0). */
void ax_net_line_end(ax_net *net, ax_line_cache *cache, double alpha);
/* The work the cache's calls did since the last call (TMVA's FLOP count, the
 * skipped passes over X not counted), for the run's GFLOP/s. */
double ax_line_cache_take_flops(ax_line_cache *cache);
/* Checkpoints: X W^T as updated along the searches is not X W^T computed
 * afresh (they differ by rounding until the next refresh, every
 * AX_LINE_CACHE_REFRESH searches), so a resumed run that is to follow the
 * uninterrupted one bit for bit takes back the cache's base and its count of
 * searches. save gives the number of values (rows x first layer width) and,
 * when base is not NULL, writes them and *searches; it gives 0 when the
 * cache holds no base (the next search computes it from X). restore fails
 * when count or searches do not fit this cache. */
enum { AX_LINE_CACHE_REFRESH = 16 };
int64_t ax_line_cache_save(const ax_line_cache *cache, double *base, int *searches);
ax_status ax_line_cache_restore(ax_line_cache *cache, const double *base, int64_t count,
                                int searches);

/* Checks a dataset fits the network: input width, labels within the output
 * width, targets of the output width. */
ax_status ax_net_check_data(const ax_net *net, const ax_dataset *data, const char *role);
/* A sparse set (ax_dataset_wrap_csr) is made dense in float32 in host memory:
 * AX_STATUS_UNSUPPORTED on another precision or a device backend. */
ax_status ax_net_check_sparse(const ax_net *net, const ax_dataset *data, const char *role);

#endif
