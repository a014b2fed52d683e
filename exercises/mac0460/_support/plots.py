"""MAC0460's plotting module, as the notebook imports it (`from plots import simple_step_plot,
plot_points_regression`). Written for the grader: it draws nothing, so a notebook handed in whole
imports and runs its cells without matplotlib or a display."""


def _no_plot(*args, **kwargs):
    return None


simple_step_plot = _no_plot
plot_points_regression = _no_plot
plot_cost_function_curve = _no_plot
