"""Geometry metrics of point clouds: isotropy, clusterability, intrinsic dimension.

Every metric takes a ``(n_points, dim)`` torch tensor (any device) or numpy
array and returns a float, computing on the input's device with float64
reductions. ``*_tensor`` variants skip input checks and return 0-d tensors, for
loops that must not sync with the host.
"""

from ._validate import Clusters, as_points, encode_labels
from .clusters import ClusterChoice, cluster_centered, kmeans, select_clusters, subtract_cluster_means
from .geometry import METRIC_NAMES, METRIC_NEEDS, MetricInputError, geometry, sample_rows
from .intrinsic_dim import distinct_points, knn_distances, lid_from_distances, lid_mle, twonn, twonn_from_distances
from .isotropy import (
    check_shrinkage,
    cosine_anisotropy,
    covariance,
    covariance_tensor,
    isoscore,
    isoscore_and_star_tensor,
    isoscore_of_covariance,
    isoscore_star,
    isoscore_star_tensor,
    isoscore_tensor,
    s_inter,
    s_inter_by_type_count,
    s_intra,
)
from .outliers import (
    cosine_shares,
    drop_dimensions,
    mean_abs_activation,
    outlier_dimensions,
    outlier_points,
    peak_ratio,
    points_variance_share,
)
from .silhouette import (
    silhouette,
    silhouette_sqeuclidean,
    silhouette_sqeuclidean_tensor,
    silhouette_tensor,
    silhouettes,
)
from .similarity import linear_cka, linear_cka_matrices, linear_cka_matrix
from .spectrum import (
    alignment,
    alpha_req,
    covariance_spectrum_sizes,
    effective_rank,
    participation_ratio,
    spectrum_sizes,
    stable_rank,
    uniformity,
    variance_effective_rank,
)

__all__ = [
    "alignment",
    "alpha_req",
    "covariance_spectrum_sizes",
    "effective_rank",
    "participation_ratio",
    "spectrum_sizes",
    "stable_rank",
    "uniformity",
    "variance_effective_rank",
    "Clusters",
    "ClusterChoice",
    "METRIC_NAMES",
    "METRIC_NEEDS",
    "MetricInputError",
    "as_points",
    "cluster_centered",
    "check_shrinkage",
    "cosine_anisotropy",
    "cosine_shares",
    "covariance",
    "covariance_tensor",
    "distinct_points",
    "drop_dimensions",
    "encode_labels",
    "geometry",
    "isoscore",
    "isoscore_and_star_tensor",
    "isoscore_of_covariance",
    "isoscore_star",
    "isoscore_star_tensor",
    "isoscore_tensor",
    "kmeans",
    "linear_cka",
    "linear_cka_matrices",
    "linear_cka_matrix",
    "knn_distances",
    "lid_from_distances",
    "lid_mle",
    "mean_abs_activation",
    "outlier_dimensions",
    "outlier_points",
    "points_variance_share",
    "peak_ratio",
    "s_inter",
    "s_inter_by_type_count",
    "s_intra",
    "sample_rows",
    "select_clusters",
    "silhouette",
    "silhouette_sqeuclidean",
    "silhouette_sqeuclidean_tensor",
    "silhouette_tensor",
    "silhouettes",
    "subtract_cluster_means",
    "twonn",
    "twonn_from_distances",
]
