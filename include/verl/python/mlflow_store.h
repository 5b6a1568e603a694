// The MLflow store verl's mlflow logger and its mlflow rollout traces use, as Python source for the embedded
// interpreter: exec it into a scope, then `uri, note = verl_mlflow_tracking_uri(mlflow, "MLflow writes to")`.
// MLFLOW_TRACKING_URI when set, else verl's default sqlite:////tmp/mlruns.db; without a SQL store (mlflow-skinny
// has none) MLflow's own folder ./mlruns, with a note naming it for the caller to log.
#pragma once

namespace verl::python {

extern const char* const kMlflowTrackingUriSource;

}  // namespace verl::python
