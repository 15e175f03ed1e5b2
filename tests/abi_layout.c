/* abi_layout.c: prints the C compiler's sizeof and offsetof of every struct
 * of axon.h that the Python binding declares for ctypes (python/axon/_lib.py,
 * STRUCTS), one "struct field offset" line each ("struct sizeof N" for the
 * size); python/tests/test_binding.py compares them with ctypes' layout, so
 * a field added to axon.h but not to the binding (or in another place) fails
 * there instead of corrupting memory. Written by python/tests/make_abi_layout.py from
 * _lib.STRUCTS; a struct or field missing here is reported by that test. */
#include <stddef.h>
#include <stdio.h>

#include "axon.h"

#define SIZE(type) printf("%s sizeof %zu\n", #type, sizeof(type))
#define FIELD(type, field) printf("%s %s %zu\n", #type, #field, offsetof(type, field))

int main(void)
{
    SIZE(ax_layer_spec);
    FIELD(ax_layer_spec, kind);
    FIELD(ax_layer_spec, dense.units);
    FIELD(ax_layer_spec, dense.activation);
    FIELD(ax_layer_spec, conv.filters);
    FIELD(ax_layer_spec, conv.kernel_height);
    FIELD(ax_layer_spec, conv.kernel_width);
    FIELD(ax_layer_spec, conv.stride);
    FIELD(ax_layer_spec, conv.padding);
    FIELD(ax_layer_spec, conv.activation);
    FIELD(ax_layer_spec, pool.window);
    FIELD(ax_layer_spec, pool.stride);
    SIZE(ax_device);
    FIELD(ax_device, backend);
    FIELD(ax_device, index);
    SIZE(ax_net_config);
    FIELD(ax_net_config, size);
    FIELD(ax_net_config, input_width);
    FIELD(ax_net_config, layer_count);
    FIELD(ax_net_config, layers);
    FIELD(ax_net_config, parsed_layers);
    FIELD(ax_net_config, loss);
    FIELD(ax_net_config, init);
    FIELD(ax_net_config, init_range);
    FIELD(ax_net_config, precision);
    FIELD(ax_net_config, seed);
    FIELD(ax_net_config, device);
    FIELD(ax_net_config, input_shape);
    SIZE(ax_progress);
    FIELD(ax_progress, epoch);
    FIELD(ax_progress, epochs);
    FIELD(ax_progress, batch);
    FIELD(ax_progress, batches);
    FIELD(ax_progress, epoch_done);
    FIELD(ax_progress, samples_per_second);
    FIELD(ax_progress, train_loss);
    FIELD(ax_progress, validation_loss);
    FIELD(ax_progress, validation_accuracy);
    FIELD(ax_progress, test_loss);
    FIELD(ax_progress, test_accuracy);
    FIELD(ax_progress, epoch_seconds);
    FIELD(ax_progress, gflops);
    FIELD(ax_progress, eta_seconds);
    FIELD(ax_progress, threads);
    FIELD(ax_progress, fewer_threads_seconds);
    SIZE(ax_train_config);
    FIELD(ax_train_config, size);
    FIELD(ax_train_config, optimizer);
    FIELD(ax_train_config, learning_rate);
    FIELD(ax_train_config, momentum);
    FIELD(ax_train_config, nesterov);
    FIELD(ax_train_config, beta1);
    FIELD(ax_train_config, beta2);
    FIELD(ax_train_config, epsilon);
    FIELD(ax_train_config, gtol);
    FIELD(ax_train_config, lbfgs_memory);
    FIELD(ax_train_config, line_search_max_evaluations);
    FIELD(ax_train_config, batch_size);
    FIELD(ax_train_config, epochs);
    FIELD(ax_train_config, l2);
    FIELD(ax_train_config, dropout);
    FIELD(ax_train_config, early_stop);
    FIELD(ax_train_config, keep_best);
    FIELD(ax_train_config, seed);
    FIELD(ax_train_config, shuffle);
    FIELD(ax_train_config, progress_interval);
    FIELD(ax_train_config, progress);
    FIELD(ax_train_config, progress_user);
    FIELD(ax_train_config, checkpoint_every);
    FIELD(ax_train_config, checkpoint_prefix);
    FIELD(ax_train_config, keep_checkpoints);
    FIELD(ax_train_config, checkpoint_note);
    FIELD(ax_train_config, resume);
    FIELD(ax_train_config, communicator);
    FIELD(ax_train_config, check_replicas);
    FIELD(ax_train_config, adapt_threads);
    FIELD(ax_train_config, optimizer_state);
    FIELD(ax_train_config, epsilon_before_correction);
    FIELD(ax_train_config, keep_subnormals);
    SIZE(ax_train_summary);
    FIELD(ax_train_summary, epochs_run);
    FIELD(ax_train_summary, best_epoch);
    FIELD(ax_train_summary, seconds);
    FIELD(ax_train_summary, gflop);
    FIELD(ax_train_summary, final_train_loss);
    FIELD(ax_train_summary, final_test_accuracy);
    FIELD(ax_train_summary, evaluations);
    FIELD(ax_train_summary, gradient_evaluations);
    FIELD(ax_train_summary, stop_reason);
    FIELD(ax_train_summary, communication_seconds);
    SIZE(ax_evaluation);
    FIELD(ax_evaluation, loss);
    FIELD(ax_evaluation, accuracy);
    FIELD(ax_evaluation, rows);
    FIELD(ax_evaluation, classes);
    FIELD(ax_evaluation, confusion);
    SIZE(ax_build_info);
    FIELD(ax_build_info, version);
    FIELD(ax_build_info, blas);
    FIELD(ax_build_info, blas_kernels);
    FIELD(ax_build_info, cpu_features);
    FIELD(ax_build_info, backends);
    FIELD(ax_build_info, compiler);
    FIELD(ax_build_info, openmp);
    FIELD(ax_build_info, prep);
    FIELD(ax_build_info, stats);
    SIZE(ax_csv_options);
    FIELD(ax_csv_options, label_column);
    FIELD(ax_csv_options, header);
    FIELD(ax_csv_options, regression);
    FIELD(ax_csv_options, scale);
    FIELD(ax_csv_options, delimiter);
    SIZE(ax_data_options);
    FIELD(ax_data_options, size);
    FIELD(ax_data_options, part);
    FIELD(ax_data_options, csv);
    FIELD(ax_data_options, scale);
    FIELD(ax_data_options, labels);
    FIELD(ax_data_options, synth_rows);
    FIELD(ax_data_options, synth_features);
    FIELD(ax_data_options, seed);
    FIELD(ax_data_options, name);
    FIELD(ax_data_options, labels_name);
    FIELD(ax_data_options, stream);
    FIELD(ax_data_options, crop);
    FIELD(ax_data_options, mirror);
    FIELD(ax_data_options, mean);
    SIZE(ax_prep_options);
    FIELD(ax_prep_options, size);
    FIELD(ax_prep_options, input);
    FIELD(ax_prep_options, output);
    FIELD(ax_prep_options, labels_file);
    FIELD(ax_prep_options, image_size);
    FIELD(ax_prep_options, batch_size);
    FIELD(ax_prep_options, seed);
    FIELD(ax_prep_options, grey);
    FIELD(ax_prep_options, threads);
    FIELD(ax_prep_options, progress_interval);
    FIELD(ax_prep_options, ground_truth);
    SIZE(ax_prep_progress);
    FIELD(ax_prep_progress, images_done);
    FIELD(ax_prep_progress, images_total);
    FIELD(ax_prep_progress, batches_done);
    FIELD(ax_prep_progress, batches_total);
    FIELD(ax_prep_progress, images_skipped);
    FIELD(ax_prep_progress, images_per_second);
    FIELD(ax_prep_progress, eta_seconds);
    FIELD(ax_prep_progress, seconds);
    SIZE(ax_prep_summary);
    FIELD(ax_prep_summary, images_found);
    FIELD(ax_prep_summary, images_written);
    FIELD(ax_prep_summary, images_skipped);
    FIELD(ax_prep_summary, files_ignored);
    FIELD(ax_prep_summary, batches_written);
    FIELD(ax_prep_summary, batches_reused);
    FIELD(ax_prep_summary, labels);
    FIELD(ax_prep_summary, seconds);
    FIELD(ax_prep_summary, seconds_enumerate);
    FIELD(ax_prep_summary, seconds_read);
    FIELD(ax_prep_summary, seconds_decode);
    FIELD(ax_prep_summary, seconds_resize);
    FIELD(ax_prep_summary, seconds_write);
    FIELD(ax_prep_summary, warning_count);
    FIELD(ax_prep_summary, warnings_kept);
    FIELD(ax_prep_summary, warnings);
    SIZE(ax_regularization);
    FIELD(ax_regularization, l2);
    FIELD(ax_regularization, dropout);
    FIELD(ax_regularization, dropout_key);
    FIELD(ax_regularization, dropout_first_row);
    return 0;
}
