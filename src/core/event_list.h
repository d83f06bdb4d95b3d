// The event list as an X-macro: X(enumerator, string). Private to src/core.
#pragma once

#define BATON_FOR_EACH_EVENT(X)                    \
  X(kInit, init)                                   \
  X(kBeforeLoad, before_load)                      \
  X(kAfterLoad, after_load)                        \
  X(kFitStart, fit_start)                          \
  X(kIterationStart, iteration_start)              \
  X(kEpochStart, epoch_start)                      \
  X(kBeforeDataloader, before_dataloader)          \
  X(kAfterDataloader, after_dataloader)            \
  X(kBatchStart, batch_start)                      \
  X(kBeforeTrainBatch, before_train_batch)         \
  X(kBeforeForward, before_forward)                \
  X(kAfterForward, after_forward)                  \
  X(kBeforeLoss, before_loss)                      \
  X(kAfterLoss, after_loss)                        \
  X(kBeforeBackward, before_backward)              \
  X(kAfterBackward, after_backward)                \
  X(kAfterTrainBatch, after_train_batch)           \
  X(kBatchEnd, batch_end)                          \
  X(kBatchCheckpoint, batch_checkpoint)            \
  X(kEpochEnd, epoch_end)                          \
  X(kEpochCheckpoint, epoch_checkpoint)            \
  X(kIterationEnd, iteration_end)                  \
  X(kIterationCheckpoint, iteration_checkpoint)    \
  X(kFitEnd, fit_end)                              \
  X(kEvalBeforeAll, eval_before_all)               \
  X(kEvalStart, eval_start)                        \
  X(kEvalBatchStart, eval_batch_start)             \
  X(kEvalBeforeForward, eval_before_forward)       \
  X(kEvalAfterForward, eval_after_forward)         \
  X(kEvalBatchEnd, eval_batch_end)                 \
  X(kEvalEnd, eval_end)                            \
  X(kEvalAfterAll, eval_after_all)                 \
  X(kEvalStandaloneStart, eval_standalone_start)   \
  X(kEvalStandaloneEnd, eval_standalone_end)       \
  X(kPredictStart, predict_start)                  \
  X(kPredictBatchStart, predict_batch_start)       \
  X(kPredictBeforeForward, predict_before_forward) \
  X(kPredictAfterForward, predict_after_forward)   \
  X(kPredictBatchEnd, predict_batch_end)           \
  X(kPredictEnd, predict_end)                      \
  /* end of list */
