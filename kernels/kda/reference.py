"""Float32 reference for the KDA (Kimi Delta Attention) forward pass: the plain recurrence.

Per head, with state S in R^{K x V}:
    S_t = S_{t-1} * exp(g_t)[:, None]
    u_t = v_t - k_t^T S_t
    S_t = S_t + beta_t * k_t u_t^T
    o_t = (scale * q_t)^T S_t
"""

import torch


def kda_reference(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False):
    """Step-by-step recurrence in float32 (float64 if the inputs are float64).

    q, k: [B, T, H, K]; v: [B, T, H, V]; g: [B, T, H, K] per-step log decay; beta: [B, T, H];
    initial_state: [B, H, K, V] or None. Returns (o [B, T, H, V] float32, final state or None).
    """
    B, T, H, K = q.shape
    V = v.shape[-1]
    dt = torch.float64 if q.dtype == torch.float64 else torch.float32
    if scale is None:
        scale = K**-0.5
    q, k, v, g, beta = (x.to(dt) for x in (q, k, v, g, beta))
    S = torch.zeros(B, H, K, V, dtype=dt, device=q.device)
    if initial_state is not None:
        S = S + initial_state.to(dt)
    o = torch.empty(B, T, H, V, dtype=dt, device=q.device)
    for t in range(T):
        S = S * g[:, t].exp()[..., None]
        kt = k[:, t]
        u = v[:, t] - torch.einsum("bhk,bhkv->bhv", kt, S)
        S = S + (beta[:, t, :, None] * kt)[..., None] * u[..., None, :]
        o[:, t] = torch.einsum("bhk,bhkv->bhv", q[:, t] * scale, S)
    return o, (S if output_final_state else None)
