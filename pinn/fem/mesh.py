"""Simplex meshes for the pinn geometries, built with scikit-fem (no external mesher).

- ``Interval``: a uniform ``MeshLine``;
- ``Rectangle`` / ``Box``: tensor-product triangles / tetrahedra;
- rectilinear shapes (L-shapes, T-shapes, rectangles with rectangular holes:
  CSG of rectangles or boxes, axis-aligned polygons): a tensor grid through
  every corner, keeping the cells inside (conforming and exact);
- ``Disk`` / ``Ellipse`` / ``Ball``: scikit-fem's refined circle / ball;
- any other 2-D shape with a signed distance (polygons, annuli, plates with
  holes, CSG): DistMesh (Persson & Strang 2004) on the shape's ``sdf``, with
  its corners fixed, its cells at most half the smallest feature (a radius, an
  edge; finer than asked where the cells asked for are coarser), then refined;
- 3-D CSG of boxes and balls (a box minus balls, ...): a body-centred cubic
  lattice through every box face, cleared near the spheres, plus near-uniform
  points on each sphere, tetrahedralised by Delaunay (:func:`_csg3d`).

The size is ``cells`` (cells along the longest side of the bounding box) or
``h`` (a target cell size); ``refine=r`` refines a mesh ``r`` times
uniformly (nested meshes for convergence studies), moving new boundary nodes
onto curved boundaries.
"""

from __future__ import annotations

import math

import numpy as np
import skfem

from pinn.fem.weakform import UnsupportedProblem

__all__ = ["build_mesh", "select_facets", "facet_midpoints", "default_cells"]

_DEFAULT_CELLS = {1: 128, 2: 32, 3: 8}
#: The base DistMesh's cell size at most this times the shape's smallest feature (a
#: circle of radius r then gets at least 2 pi / 0.5 ~ 12 edges before refinement).
FEATURE_CELLS = 0.5


def default_cells(dim: int) -> int:
    return _DEFAULT_CELLS.get(dim, 8)


def _kind(shape) -> str:
    return type(_unwrap(shape)).__name__


def _unwrap(shape):
    """The shape under renamed boundary parts (``shape.rename({...})``)."""
    while type(shape).__name__ == "Renamed" and hasattr(shape, "shape"):
        shape = shape.shape
    return shape


def _x64():
    """Geometry queries (JAX) in float64 for the mesher, without a global switch."""
    import jax

    return jax.enable_x64(True)


def _bounds(shape) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = _unwrap(shape).bounds
    return np.atleast_1d(np.asarray(lo, dtype=np.float64)), np.atleast_1d(
        np.asarray(hi, dtype=np.float64))


def _contains(shape, pts: np.ndarray) -> np.ndarray:
    fast = _np_sdf(shape)
    if fast is not None:
        lo, hi = _bounds(shape)
        return fast(np.asarray(pts, dtype=np.float64)) <= 1e-12 * float(np.max(hi - lo))
    with _x64():
        return np.asarray(shape.contains(pts), dtype=bool).reshape(-1)


def _leaves(shape) -> list:
    shape = _unwrap(shape)
    if _kind(shape) in ("Union", "Difference", "Intersection"):
        return _leaves(shape.a) + _leaves(shape.b)
    return [shape]


def _polygon_vertices(shape) -> np.ndarray | None:
    shape = _unwrap(shape)
    k = _kind(shape)
    if k == "Rectangle":
        lo, hi = _bounds(shape)
        return np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]]])
    if k in ("Polygon", "Triangle"):
        v = getattr(shape, "vertices", None)
        if v is None and k == "Triangle":
            v = [shape.a, shape.b, shape.c]
        return np.asarray(v, dtype=np.float64).reshape(-1, 2)
    return None


def _feature_size(shape) -> float:
    """The smallest size among the leaves of ``shape`` (a disk's or ellipse's smallest
    radius, a polygon's shortest edge); ``inf`` where no leaf says. The base mesh must be
    finer than this, or it does not see the feature (a hole smaller than its cells is
    covered by triangles whose centres lie outside it, and refining keeps it covered)."""
    sizes = []
    for leaf in _leaves(shape):
        k = _kind(leaf)
        core = _unwrap(leaf)
        if k in ("Disk", "Ball"):
            sizes.append(float(core.radius))
        elif k == "Ellipse":
            sizes.append(float(np.min(np.asarray(core.semi_axes, dtype=np.float64))))
        else:
            v = _polygon_vertices(leaf)
            if v is not None:
                e = np.linalg.norm(np.roll(v, -1, axis=0) - v, axis=1)
                if np.any(e > 0):
                    sizes.append(float(np.min(e[e > 0])))
    return min(sizes, default=math.inf)


def _rectilinear(shape) -> bool:
    """All leaves are axis-aligned boxes or polygons with axis-aligned edges."""
    for leaf in _leaves(shape):
        k = _kind(leaf)
        if k in ("Rectangle", "Box", "Interval"):
            continue
        v = _polygon_vertices(leaf)
        if v is None:
            return False
        e = np.roll(v, -1, axis=0) - v
        if not np.all(np.isclose(e[:, 0], 0) | np.isclose(e[:, 1], 0)):
            return False
    return True


def _breaks(shape, axis: int) -> np.ndarray:
    out = []
    for leaf in _leaves(shape):
        v = _polygon_vertices(leaf) if leaf.dim == 2 else None
        if v is not None:
            out.extend(v[:, axis])
        else:
            lo, hi = _bounds(leaf)
            out.extend([lo[axis], hi[axis]])
    lo, hi = _bounds(shape)
    b = np.unique(np.round(np.asarray(out, dtype=np.float64), 12))
    return b[(b >= lo[axis] - 1e-12) & (b <= hi[axis] + 1e-12)]


def _subdivide(breaks: np.ndarray, h: float) -> np.ndarray:
    pts = [breaks[:1]]
    for a, b in zip(breaks[:-1], breaks[1:], strict=True):
        n = max(1, int(math.ceil((b - a) / h - 1e-9)))
        pts.append(np.linspace(a, b, n + 1)[1:])
    return np.concatenate(pts)


def _keep_inside(mesh, shape):
    mid = mesh.p[:, mesh.t].mean(axis=1).T
    keep = np.nonzero(_contains(shape, mid))[0]
    if keep.size == 0:
        raise UnsupportedProblem(f"meshing {shape!r}: no cell lies inside the shape")
    return mesh.restrict(keep)


# ---------------------------------------------------------------------------
# signed distance helpers


def _np_sdf(shape):
    """A pure NumPy signed distance for primitives and their CSG (fast for DistMesh), or None."""
    shape = _unwrap(shape)
    k = _kind(shape)
    if k in ("Union", "Difference", "Intersection"):
        fa, fb = _np_sdf(shape.a), _np_sdf(shape.b)
        if fa is None or fb is None:
            return None
        if k == "Union":
            return lambda p: np.minimum(fa(p), fb(p))
        if k == "Intersection":
            return lambda p: np.maximum(fa(p), fb(p))
        return lambda p: np.maximum(fa(p), -fb(p))
    if k in ("Rectangle", "Box", "Interval"):
        lo, hi = _bounds(shape)
        c, hw = (lo + hi) / 2, (hi - lo) / 2

        def box(p):
            q = np.abs(p - c) - hw
            return (np.linalg.norm(np.maximum(q, 0.0), axis=1)
                    + np.minimum(np.max(q, axis=1), 0.0))

        return box
    if k in ("Disk", "Ball"):
        c, r = np.asarray(shape.center, dtype=np.float64), float(shape.radius)
        return lambda p: np.linalg.norm(p - c, axis=1) - r
    v = _polygon_vertices(shape)
    if v is not None:
        a, b = v, np.roll(v, -1, axis=0)
        e = b - a

        def poly(p):
            w = p[:, None, :] - a[None]                                   # n, m, 2
            s = np.clip(np.sum(w * e, axis=2) / np.sum(e * e, axis=1), 0.0, 1.0)
            dist = np.min(np.linalg.norm(w - s[..., None] * e, axis=2), axis=1)
            y = p[:, 1][:, None]
            cross = ((a[:, 1] <= y) != (b[:, 1] <= y)) & (
                p[:, 0][:, None] < a[:, 0] + (y - a[:, 1]) * e[:, 0] / np.where(
                    e[:, 1] == 0, 1.0, e[:, 1]))
            inside = np.sum(cross, axis=1) % 2 == 1
            return np.where(inside, -dist, dist)

        return poly
    return None


def _sdf_fn(shape):
    """A NumPy signed distance (negative inside), or None."""
    fast = _np_sdf(shape)
    if fast is not None:
        return lambda p: fast(np.asarray(p, dtype=np.float64).reshape(-1, shape.dim))
    if not hasattr(shape, "sdf"):
        return None

    def fd(p: np.ndarray) -> np.ndarray:
        # pad to a power of two: the geometry is jitted, and every new size would recompile
        p = np.asarray(p, dtype=np.float64)
        n = len(p)
        size = max(256, 1 << (max(n, 1) - 1).bit_length())
        pad = np.concatenate([p, np.repeat(p[:1], size - n, axis=0)]) if n else np.zeros(
            (size, p.shape[1]))
        with _x64():
            d = shape.sdf(pad)
        return np.asarray(d, dtype=np.float64).reshape(-1)[:n]

    return fd


def _project(fd, p: np.ndarray, scale: float, iters: int = 3) -> np.ndarray:
    """Move points onto the zero level set of ``fd`` (Newton steps with a numeric gradient)."""
    p = p.copy()
    eps = 1e-7 * scale
    dim = p.shape[1]
    for _ in range(iters):
        d = fd(p)
        grad = np.empty_like(p)
        for k in range(dim):
            dp = np.zeros(dim)
            dp[k] = eps
            grad[:, k] = (fd(p + dp) - fd(p - dp)) / (2 * eps)
        g2 = np.maximum(np.sum(grad**2, axis=1), 1e-300)
        p -= (d / g2)[:, None] * grad
    return p


def _distmesh2d(fd, h0: float, lo: np.ndarray, hi: np.ndarray, pfix: np.ndarray,
                max_iter: int = 150) -> tuple[np.ndarray, np.ndarray]:
    """DistMesh (Persson & Strang, SIAM Review 2004) with a uniform size."""
    from scipy.spatial import Delaunay

    geps = 1e-3 * h0
    dptol, ttol, fscale, deltat = 2e-3, 0.1, 1.2, 0.2
    xs = np.arange(lo[0], hi[0] + h0 / 2, h0)
    ys = np.arange(lo[1], hi[1] + h0 / 2, h0 * math.sqrt(3) / 2)
    X, Y = np.meshgrid(xs, ys)
    X[1::2, :] += h0 / 2
    p = np.column_stack([X.ravel(), Y.ravel()])
    p = p[fd(p) < geps]
    if len(pfix):
        far = np.min(np.linalg.norm(p[:, None, :] - pfix[None, :, :], axis=2), axis=1) > 0.5 * h0
        p = np.vstack([pfix, p[far]])
    nfix = len(pfix)
    pold = np.full_like(p, np.inf)
    scale = float(np.max(hi - lo))
    tri = bars = None
    for _ in range(max_iter):
        if np.max(np.linalg.norm(p - pold, axis=1)) / h0 > ttol:
            pold = p.copy()
            tri = Delaunay(p).simplices
            tri = tri[fd(p[tri].mean(axis=1)) < -geps]
            e = np.vstack([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
            bars = np.unique(np.sort(e, axis=1), axis=0)
        vec = p[bars[:, 0]] - p[bars[:, 1]]
        L = np.linalg.norm(vec, axis=1)
        L0 = fscale * math.sqrt(np.sum(L**2) / len(L))
        F = np.maximum(L0 - L, 0.0)
        Fv = (F / L)[:, None] * vec
        Ftot = np.column_stack([
            np.bincount(bars[:, 0], Fv[:, k], minlength=len(p))
            - np.bincount(bars[:, 1], Fv[:, k], minlength=len(p)) for k in range(2)])
        Ftot[:nfix] = 0
        p = p + deltat * Ftot
        d = fd(p)
        out = d > 0
        if np.any(out):
            p[out] = _project(fd, p[out], scale, iters=1)
        move = np.sqrt(np.sum((deltat * Ftot[d < -geps]) ** 2, axis=1))
        if move.size == 0 or np.max(move) / h0 < dptol:
            break
    tri = Delaunay(p).simplices
    tri = tri[fd(p[tri].mean(axis=1)) < -geps]
    a = p[tri[:, 1]] - p[tri[:, 0]]
    b = p[tri[:, 2]] - p[tri[:, 0]]
    area = 0.5 * np.abs(a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0])
    tri = tri[area > 1e-10 * h0 * h0]
    used, inv = np.unique(tri, return_inverse=True)
    return p[used], inv.reshape(tri.shape)


def _corners(shape, fd, scale: float) -> np.ndarray:
    pts = []
    for leaf in _leaves(shape):
        v = _polygon_vertices(leaf)
        if v is not None:
            pts.extend(v)
    if not pts:
        return np.zeros((0, 2))
    pts = np.unique(np.round(np.asarray(pts), 12), axis=0)
    return pts[np.abs(fd(pts)) < 1e-9 * scale]


# ---------------------------------------------------------------------------


def _target_h(shape, cells: int | None, h: float | None) -> float:
    lo, hi = _bounds(shape)
    ext = float(np.max(hi - lo))
    if h is not None:
        if not h > 0:
            raise ValueError(f"cell size h must be positive, got {h}")
        return float(h)
    n = default_cells(shape.dim) if cells is None else int(cells)
    if n < 1:
        raise ValueError(f"cells must be a positive integer, got {cells}")
    return ext / n


def build_mesh(shape, *, cells: int | None = None, h: float | None = None,
               refine: int | None = None) -> skfem.Mesh:
    """A first-order simplex mesh of ``shape`` (a pinn geometry)."""
    if refine is not None:
        if refine < 0:
            raise ValueError(f"refine must be >= 0, got {refine}")
        base = build_mesh(shape, cells=cells if cells is not None else 2, h=h)
        return refine_mesh(base, shape, refine)
    k = _kind(shape)
    dim = shape.dim
    hh = _target_h(shape, cells, h)
    core = _unwrap(shape)
    if k == "Interval" or (dim == 1 and hasattr(shape, "bounds")):
        lo, hi = _bounds(shape)
        n = max(1, int(math.ceil((hi[0] - lo[0]) / hh - 1e-9)))
        return skfem.MeshLine(np.linspace(lo[0], hi[0], n + 1))
    if k in ("Disk", "Ellipse") and dim == 2:
        c = np.asarray(core.center, dtype=np.float64)
        ax = (np.array([core.radius] * 2, dtype=np.float64) if k == "Disk"
              else np.asarray(core.semi_axes, dtype=np.float64))
        nref = max(1, int(math.ceil(math.log2(max(ax) / hh))))
        m = skfem.MeshTri.init_circle(nref)
        return skfem.MeshTri(m.p * ax[:, None] + c[:, None], m.t)
    if k == "Ball" and dim == 3:
        c = np.asarray(core.center, dtype=np.float64)
        r = float(core.radius)
        nref = max(1, int(math.ceil(math.log2(r / hh))))
        m = skfem.MeshTet.init_ball(nref)
        return skfem.MeshTet(m.p * r + c[:, None], m.t)
    if dim in (2, 3) and _rectilinear(shape):
        grids = [_subdivide(_breaks(shape, a), hh) for a in range(dim)]
        m = (skfem.MeshTri.init_tensor(*grids) if dim == 2 else skfem.MeshTet.init_tensor(*grids))
        if k in ("Rectangle", "Box"):
            return m
        return _keep_inside(m, shape)
    if dim == 2:
        fd = _sdf_fn(shape)
        if fd is None:
            raise UnsupportedProblem(f"cannot mesh {shape!r}: it has no sdf(); pass mesh=...")
        lo, hi = _bounds(shape)
        scale = float(np.max(hi - lo))
        # DistMesh up to ~20 cells across, then uniform refinement (boundary nodes projected);
        # the base mesh finer than the smallest feature (a radius, an edge): a coarser one
        # covers a small hole, and refinement keeps it covered
        # (finer than asked where the cells asked for are coarser than that feature)
        times = max(0, int(math.ceil(math.log2(scale / (20 * hh)))))
        finest = FEATURE_CELLS * _feature_size(shape)
        while times > 0 and hh * 2**times > finest:
            times -= 1
        h0 = min(hh * 2**times, finest)
        p, t = _distmesh2d(fd, h0, lo - 0.1 * h0, hi + 0.1 * h0, _corners(shape, fd, scale))
        m = skfem.MeshTri(p.T.copy(), t.T.astype(np.int32).copy())
        return refine_mesh(m, shape, times) if times else m
    if dim == 3 and all(_kind(leaf) in ("Box", "Ball") for leaf in _leaves(shape)):
        return _csg3d(shape, hh)
    raise UnsupportedProblem(
        f"the FEM baseline cannot mesh {k} in {dim}-D without an external mesher; "
        "build a scikit-fem mesh yourself (e.g. with gmsh) and pass mesh=..."
    )


def _sphere_points(center: np.ndarray, radius: float, h: float) -> np.ndarray:
    """Near-uniform points at spacing ~``h`` on a sphere (a Fibonacci lattice)."""
    n = max(12, int(round(4 * math.pi * radius**2 / (math.sqrt(3) / 2 * h * h))))
    k = np.arange(n) + 0.5
    z = 1 - 2 * k / n
    phi = math.pi * (3 - math.sqrt(5)) * k
    rho = np.sqrt(1 - z * z)
    return center + radius * np.column_stack([rho * np.cos(phi), rho * np.sin(phi), z])


def _tet_volumes(p: np.ndarray, t: np.ndarray) -> np.ndarray:
    a, b, c = (p[t[:, i]] - p[t[:, 0]] for i in (1, 2, 3))
    return np.einsum("ij,ij->i", a, np.cross(b, c)) / 6


def _csg3d(shape, h: float, gap: float = 0.7, jitter: float = 0.15,
           band: float = 1.5) -> skfem.MeshTet:
    """Tetrahedra of a 3-D CSG of boxes and balls at cell size ~``h``.

    Points: a body-centred cubic lattice (a tensor grid through every box face,
    see :func:`_subdivide`, plus the centre of each of its cells; its Delaunay
    tetrahedra are unique, with dihedral angles of 60 and 90 degrees) with the
    points within ``gap * h`` of a sphere removed (on both sides, so that the
    sphere's own triangles are Delaunay), points on each sphere at spacing
    ~``h`` where it bounds the shape, and the lattice points within ``band * h``
    of a sphere moved by up to ``jitter * h`` (a fixed seed; along the box faces
    for points on them) so that the cut lattice has no four cospherical points
    there. The Delaunay tetrahedra whose centroid lies inside the shape are kept,
    less the flat ones on planar walls. Curves where a sphere cuts a box face or
    another sphere are not resolved exactly (the boundary is jagged there within
    a cell), and tetrahedra straddle the lattice planes inside the shape (a
    coefficient that jumps across a plane is cut by cells: slower convergence).
    """
    from scipy.spatial import Delaunay

    fd = _sdf_fn(shape)
    lo, hi = _bounds(shape)
    scale = float(np.max(hi - lo))
    tol = 1e-9 * scale
    leaves = _leaves(shape)
    boxes = [leaf for leaf in leaves if _kind(leaf) == "Box"]
    balls = [(np.asarray(leaf.center, dtype=np.float64), float(leaf.radius))
             for leaf in leaves if _kind(leaf) == "Ball"]
    grids, planes = [], []
    for a in range(3):
        cuts = [lo[a], hi[a]] + [v for b in boxes for v in (_bounds(b)[0][a], _bounds(b)[1][a])]
        cuts = np.unique(np.round(np.asarray(cuts, dtype=np.float64), 12))
        planes.append(cuts[(cuts >= lo[a] - 1e-12) & (cuts <= hi[a] + 1e-12)])
        grids.append(_subdivide(planes[-1], h))
    mids = [(g[1:] + g[:-1]) / 2 for g in grids]
    pts = np.vstack([np.stack(np.meshgrid(*g, indexing="ij"), -1).reshape(-1, 3)
                     for g in (grids, mids)])
    dist = np.full(len(pts), np.inf)
    for c, r in balls:
        dist = np.minimum(dist, np.abs(np.linalg.norm(pts - c, axis=1) - r))
    pts, dist = pts[dist > gap * h], dist[dist > gap * h]
    near = dist < band * h
    move = jitter * h * np.random.default_rng(0).uniform(-1.0, 1.0, (int(near.sum()), 3))
    for a in range(3):  # points on a box face stay on it
        on = np.min(np.abs(pts[near, a][:, None] - planes[a][None]), axis=1) < tol
        move[on, a] = 0.0
    pts[near] += move
    surface = [_sphere_points(c, r, h) for c, r in balls]
    surface = [s[np.abs(fd(s)) <= tol] for s in surface]
    p = np.vstack([pts, *surface])
    t = Delaunay(p).simplices
    t = t[fd(p[t].mean(axis=1)) < -tol]
    vol = _tet_volumes(p, t)
    keep = np.abs(vol) > 1e-9 * h**3  # flat ones lie on planar walls
    t, vol = t[keep], vol[keep]
    t[vol < 0, :2] = t[vol < 0][:, [1, 0]]  # positive orientation
    if t.size == 0:
        raise UnsupportedProblem(f"meshing {shape!r}: no cell lies inside the shape")
    used, inv = np.unique(t, return_inverse=True)
    mesh = skfem.MeshTet(p[used].T.copy(), inv.reshape(t.shape).T.astype(np.int32).copy())
    mid = facet_midpoints(mesh, mesh.boundary_facets())
    worst = float(np.max(np.abs(fd(mid)), initial=0.0))
    if worst > 0.25 * h:
        raise UnsupportedProblem(
            f"meshing {shape!r} at h={h:g}: a boundary face lies {worst:.3g} from the boundary "
            "(the tetrahedra do not fill the shape); try another cells=/h=, or pass mesh=...")
    return mesh


def refine_mesh(mesh: skfem.Mesh, shape, times: int) -> skfem.Mesh:
    """Refine uniformly ``times`` times, moving new boundary nodes onto the shape's boundary."""
    fd = _sdf_fn(shape)
    lo, hi = _bounds(shape)
    scale = float(np.max(hi - lo))
    for _ in range(times):
        mesh = mesh.refined()
        if fd is not None and mesh.dim() > 1:
            b = mesh.boundary_nodes()
            pts = mesh.p[:, b].T
            d = fd(pts)
            off = np.abs(d) > 1e-12 * scale
            if np.any(off):
                p = mesh.p.copy()
                p[:, b[off]] = _project(fd, pts[off], scale).T
                mesh = type(mesh)(p, mesh.t)
    return mesh


# ---------------------------------------------------------------------------
# boundary parts


def facet_midpoints(mesh: skfem.Mesh, facets: np.ndarray) -> np.ndarray:
    return mesh.p[:, mesh.facets[:, facets]].mean(axis=1).T


def _mask(shape, pts: np.ndarray, on, coords=None) -> np.ndarray:
    from pinn.dsl.expr import Expr

    if isinstance(on, str) and on == "boundary":
        return np.ones(len(pts), dtype=bool)
    if not hasattr(shape, "boundary_mask"):
        raise UnsupportedProblem(f"{shape!r} has no boundary_mask(); cannot select {on!r}")
    kw = {"coords": tuple(coords)} if coords is not None and isinstance(on, Expr) else {}
    pts = np.asarray(pts, dtype=np.float64)
    n = len(pts)
    if n == 0:
        return np.zeros(0, dtype=bool)
    # op by op, not jitted: every query of a parametric problem is a new shape
    # (pinn.design.fixed_problem), and a jitted mask compiles again for each (~0.1 s, most
    # of a small solve); eagerly it takes milliseconds. Padded to a power of two: each op
    # is compiled once per size
    import jax

    size = max(256, 1 << (n - 1).bit_length())
    padded = np.concatenate([pts, np.repeat(pts[:1], size - n, axis=0)])
    with _x64(), jax.disable_jit():
        m = shape.boundary_mask(padded, on, **kw)
    return np.asarray(m, dtype=bool).reshape(-1)[:n]


def select_facets(mesh: skfem.Mesh, shape, on, coords=None) -> np.ndarray:
    """Indices of the boundary facets of ``mesh`` on the part(s) ``on`` of ``shape``.

    Facet midpoints are moved onto curved boundaries first (with the sdf) so
    that the geometry's own test decides.
    """
    bf = mesh.boundary_facets()
    if isinstance(on, str) and on == "boundary":
        return bf
    mid = facet_midpoints(mesh, bf)
    fd = _sdf_fn(shape)
    if fd is not None and mesh.dim() > 1:
        lo, hi = _bounds(shape)
        mid = _project(fd, mid, float(np.max(hi - lo)), iters=2)
    return bf[_mask(shape, mid, on, coords)]


def select_boundary_points(shape, pts: np.ndarray, on, coords=None) -> np.ndarray:
    """Mask of points (on the mesh boundary) that lie on the part(s) ``on``."""
    return _mask(shape, pts, on, coords)
