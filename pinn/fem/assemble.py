"""Numerical assembly of a :class:`~pinn.fem.weakform.WeakForm` on a scikit-fem mesh.

Integrands are evaluated once per assembly at all quadrature points (NumPy,
float64) and contracted with the basis functions' values and gradients with
batched matrix products; scikit-fem provides the meshes, elements, bases and
quadrature.
"""

from __future__ import annotations

import copy
import hashlib

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import skfem

from pinn.dsl import expr as E
from pinn.dsl.evaluate import evaluate_numpy, evaluate_points_numpy
from pinn.fem import mesh as M
from pinn.fem.weakform import Integrand, UnsupportedProblem, WeakForm

#: SuperLU's column ordering: minimum degree on A^T + A suits the structurally symmetric
#: matrices of FEM (measured: 2-6x faster factorisations than the default COLAMD, half the
#: fill, on P1-P3 Poisson meshes of 10^5 dofs)
_ORDERING = "MMD_AT_PLUS_A"
# SuperLU prefers diagonal pivots (it still pivots off the diagonal when one is small): with
# the symmetric ordering above, 20x faster on 3-D P1 Laplacians (11 k dofs: 0.5 s, not 11 s)
_LU_OPTIONS = {"SymmetricMode": True}

__all__ = ["Discretisation", "element_for"]


def element_for(mesh: skfem.Mesh, degree: int) -> skfem.Element:
    table = {
        skfem.MeshLine1: {1: skfem.ElementLineP1, 2: skfem.ElementLineP2},
        skfem.MeshTri1: {1: skfem.ElementTriP1, 2: skfem.ElementTriP2, 3: skfem.ElementTriP3,
                         4: skfem.ElementTriP4},
        skfem.MeshTet1: {1: skfem.ElementTetP1, 2: skfem.ElementTetP2},
    }
    for cls, els in table.items():
        if isinstance(mesh, cls):
            if degree not in els:
                raise UnsupportedProblem(
                    f"no P{degree} element on {type(mesh).__name__}; available: "
                    f"{', '.join(f'P{k}' for k in els)}")
            return els[degree]()
    raise UnsupportedProblem(f"the FEM baseline works on simplex meshes (MeshLine, MeshTri, "
                             f"MeshTet), got {type(mesh).__name__}")


def _basis_values(basis) -> np.ndarray:
    """``[d + 1, nbfun, nelems, nqp]``: values, then each partial derivative."""
    vals = np.stack([np.asarray(b[0]) for b in basis.basis])
    out = [vals]
    if hasattr(basis.basis[0][0], "grad") and basis.basis[0][0].grad is not None:
        grads = np.stack([b[0].grad for b in basis.basis])  # nb, d, ne, nq
        out += [grads[:, i] for i in range(grads.shape[1])]
    return np.stack(out)


def _bcast(v, shape) -> np.ndarray:
    return np.broadcast_to(np.asarray(v, dtype=np.float64), shape)


class Discretisation:
    """Bases, quadrature data, boundary parts and Dirichlet data of one problem on one mesh."""

    def __init__(self, problem, wf: WeakForm, mesh: skfem.Mesh, intorder: int | None = None):
        self.problem = problem
        self.wf = wf
        self.mesh = mesh
        self.shape = problem.space
        self._coord_names = tuple(c.name for c in problem.spatial)
        self._facet_cache: dict = {}
        fields = wf.fields
        self.fields = fields
        kmax = max(wf.degree.values())
        self.intorder = intorder if intorder is not None else 2 * kmax + 1
        self.elements = {f: element_for(mesh, wf.degree[f]) for f in fields}
        self.bases = {f: skfem.CellBasis(mesh, self.elements[f], intorder=self.intorder)
                      for f in fields}
        self.offsets: dict[E.Field, int] = {}
        n = 0
        for f in fields:
            self.offsets[f] = n
            n += self.bases[f].N
        self.N = n
        b0 = self.bases[fields[0]]
        self.x = np.asarray(b0.global_coordinates())         # d, ne, nq
        self.dx = b0.dx                                  # ne, nq
        self.phi = {f: _basis_values(self.bases[f]) for f in fields}
        self.gdofs = {f: self.bases[f].element_dofs + self.offsets[f] for f in fields}
        self._boundary = [self._boundary_data(bt) for bt in wf.boundary]
        self._dirichlet = [self._dirichlet_data(ds) for ds in wf.dirichlet]
        self._build_periodic()
        fixed = [d for d, _, _ in self._dirichlet]
        self.pinned: dict[E.Field, int] = {}
        for f in sorted(wf.value_free, key=lambda f: fields.index(f)):
            dof = int(self.master[self.offsets[f]])  # pin one dof; mean-zero afterwards
            self.pinned[f] = dof
            fixed.append(np.array([dof]))
        self.fixed = np.unique(np.concatenate(fixed)) if fixed else np.zeros(0, dtype=np.int64)
        self.free = np.setdiff1d(np.arange(self.N), self.fixed)
        self._build_reduction()
        self._build_pattern()
        bad = [ds.name for ds, (dofs, _, _) in zip(wf.dirichlet, self._dirichlet, strict=True)
               if dofs.size == 0]
        if bad:
            import warnings

            warnings.warn(f"{problem.name}: Dirichlet condition(s) {bad} select no boundary "
                          "point of the mesh", stacklevel=3)

    # -- boundary data -------------------------------------------------------
    def _facets(self, on) -> np.ndarray:
        key = repr(on)
        if key not in self._facet_cache:
            self._facet_cache[key] = M.select_facets(self.mesh, self.shape, on, self._coord_names)
        return self._facet_cache[key]

    def _boundary_data(self, bt):
        facets = self._facets(bt.on)
        if facets.size == 0:
            return None
        fbs = {f: skfem.FacetBasis(self.mesh, self.elements[f], facets=facets,
                                   intorder=self.intorder) for f in self.fields}
        fb = fbs[bt.test]
        return {
            "term": bt, "fbs": fbs,
            "x": np.asarray(fb.global_coordinates()), "dx": fb.dx,
            "test": np.stack([np.asarray(b[0]) for b in fb.basis])[None],
            "trial": {f: np.stack([np.asarray(b[0]) for b in fbs[f].basis])[None]
                      for f in self.fields},
            "gdofs": {f: fbs[f].element_dofs + self.offsets[f] for f in self.fields},
        }

    def _dirichlet_data(self, ds):
        basis = self.bases[ds.field]
        facets = self._facets(ds.on)
        if facets.size:
            dofs = basis.get_dofs(facets).all()
        else:
            # a predicate that selects points rather than facets (e.g. a corner)
            bdofs = basis.get_dofs(self.mesh.boundary_facets()).all()
            pts = basis.doflocs[:, bdofs].T
            dofs = bdofs[M.select_boundary_points(self.shape, pts, ds.on, self._coord_names)]
        dofs = np.asarray(dofs, dtype=np.int64)
        return dofs + self.offsets[ds.field], basis.doflocs[:, dofs].T, ds.value

    def dirichlet_values(self, U: np.ndarray, t: float | None = None) -> np.ndarray:
        """A copy of ``U`` with the Dirichlet values (at time ``t``) and pins set."""
        U = U.copy()
        p = self.problem
        for dofs, pts, value in self._dirichlet:
            if dofs.size:
                vals = evaluate_points_numpy(value, p.spatial, pts, t=t, time_coord=p.time_coord)
                U[dofs] = vals
                U[self.master[dofs]] = vals      # a periodic image takes the same value
        for _, dof in self.pinned.items():
            U[dof] = 0.0
        return self.enforce(U)

    def interpolate(self, exprs: dict[E.Field, E.Expr], t: float | None = None) -> np.ndarray:
        """Nodal interpolation of field expressions (e.g. initial conditions)."""
        U = np.zeros(self.N)
        p = self.problem
        for f, ex in exprs.items():
            b = self.bases[f]
            U[self.offsets[f]: self.offsets[f] + b.N] = evaluate_points_numpy(
                ex, p.spatial, b.doflocs.T, t=t, time_coord=p.time_coord)
        return self.enforce(U)

    def split(self, U: np.ndarray) -> dict[E.Field, np.ndarray]:
        return {f: U[self.offsets[f]: self.offsets[f] + self.bases[f].N] for f in self.fields}

    # -- environments ----------------------------------------------------------
    def _env(self, U: np.ndarray, t: float | None) -> dict:
        """Coordinates, field values and first derivatives at the quadrature points."""
        env: dict = {c: self.x[i] for i, c in enumerate(self.problem.spatial)}
        if self.problem.time_coord is not None and t is not None:
            env[self.problem.time_coord] = float(t)
        for f in self.fields:
            loc = U[self.gdofs[f]]                                  # nb, ne
            vals = np.einsum("be,abeq->aeq", loc, self.phi[f])
            env[f] = vals[0]
            for i, c in enumerate(self.problem.spatial):
                env[E.Derivative(f, (c,))] = vals[i + 1]
        return env

    def _benv(self, bd, U: np.ndarray, t: float | None) -> dict:
        env: dict = {c: bd["x"][i] for i, c in enumerate(self.problem.spatial)}
        if self.problem.time_coord is not None and t is not None:
            env[self.problem.time_coord] = float(t)
        for f in self.fields:
            env[f] = np.einsum("be,beq->eq", U[bd["gdofs"][f]], bd["trial"][f][0])
        return env

    # -- assembly --------------------------------------------------------------
    def residual(self, U: np.ndarray, t: float | None = None) -> np.ndarray:
        R = np.zeros(self.N)
        env = self._env(U, t)
        shape = self.dx.shape
        for form in self.wf.equations:
            T = self.phi[form.test]
            integ = _bcast(evaluate_numpy(form.source.expr, env), shape) * self.dx
            loc = np.einsum("eq,beq->be", integ, T[0])
            for i, fl in enumerate(form.flux):
                if _is_zero_expr(fl.expr):
                    continue
                integ = _bcast(evaluate_numpy(fl.expr, env), shape) * self.dx
                loc += np.einsum("eq,beq->be", integ, T[i + 1])
            R += np.bincount(self.gdofs[form.test].ravel(), loc.ravel(), minlength=self.N)
        for bd in self._boundary:
            if bd is None:
                continue
            it: Integrand = bd["term"].integrand
            benv = self._benv(bd, U, t)
            integ = _bcast(evaluate_numpy(it.expr, benv), bd["dx"].shape) * bd["dx"]
            loc = np.einsum("eq,beq->be", integ, bd["test"][0])
            g = bd["gdofs"][bd["term"].test]
            R += np.bincount(g.ravel(), loc.ravel(), minlength=self.N)
        return R

    def _build_pattern(self) -> None:
        """One CSR sparsity pattern for every block the Jacobian and mass can touch."""
        segs: dict = {}
        for form in self.wf.equations:
            trial = ({g for it in (form.source, *form.flux) for (g, _) in it.jac}
                     | set(form.mass) | set(form.inertia))
            for g in trial:
                segs[("cell", form.test, g)] = self._pairs(form.test, g)
        for k, bd in enumerate(self._boundary):
            if bd is None:
                continue
            f = bd["term"].test
            for (g, _) in bd["term"].integrand.jac:
                gf, gg = bd["gdofs"][f], bd["gdofs"][g]
                shp = (gf.shape[1], gf.shape[0], gg.shape[0])
                segs[("facet", k, g)] = (np.broadcast_to(gf.T[:, :, None], shp).ravel(),
                                         np.broadcast_to(gg.T[:, None, :], shp).ravel())
        diag = np.arange(self.N, dtype=np.int64)
        keys = [np.asarray(r, dtype=np.int64) * self.N + c for r, c in segs.values()]
        allk = np.concatenate(keys + [diag * self.N + diag])
        uniq, inv = np.unique(allk, return_inverse=True)
        rows = uniq // self.N
        self.indices = (uniq % self.N).astype(np.int32)
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=self.N))]
                                     ).astype(np.int32)
        self.nnz = len(uniq)
        pos, o = {}, 0
        for key, k in zip(segs, keys, strict=True):
            pos[key] = inv[o: o + len(k)]
            o += len(k)
        self._pos = pos
        self._diag_pos = inv[o:]
        fixed_row = np.zeros(self.N, dtype=bool)
        fixed_row[self.fixed] = True
        self._fixed_data = np.nonzero(fixed_row[rows])[0]
        self._fixed_diag = self._diag_pos[self.fixed]

    # -- periodic conditions -----------------------------------------------------
    def _build_periodic(self) -> None:
        """``master[i]``: the dof that dof ``i`` copies (itself unless periodic)."""
        master = np.arange(self.N)
        for name, fields, (a, b) in self.wf.periodic:
            fa, fb = self._facets(a), self._facets(b)
            for f in fields:
                basis, off = self.bases[f], self.offsets[f]
                da = np.unique(basis.get_dofs(fa).all()) if fa.size else np.zeros(0, int)
                db = np.unique(basis.get_dofs(fb).all()) if fb.size else np.zeros(0, int)
                if da.size == 0 or da.size != db.size:
                    raise UnsupportedProblem(
                        f"{self.problem.name}, condition {name!r}: the parts {a!r} and {b!r} "
                        f"carry {da.size} and {db.size} dofs of {f.name}; periodic conditions "
                        "need matching meshes on both parts (intervals, rectangles, boxes)")
                pa, pb = basis.doflocs[:, da].T, basis.doflocs[:, db].T
                shift = pb.min(axis=0) - pa.min(axis=0)
                from scipy.spatial import cKDTree

                dist, idx = cKDTree(pb).query(pa + shift)
                scale = float(np.max(np.ptp(self.mesh.p, axis=1)))
                if np.max(dist) > 1e-8 * scale:
                    raise UnsupportedProblem(
                        f"{self.problem.name}, condition {name!r}: the dofs on {b!r} are not a "
                        f"translate of those on {a!r} (mismatch {np.max(dist):.3g}); periodic "
                        "conditions need matching meshes")
                master[db[idx] + off] = da + off
        for _ in range(4):  # corners of doubly periodic boxes map through two pairs
            master = master[master]
        self.master = master
        self.periodic = bool(np.any(master != np.arange(self.N)))

    def _build_reduction(self) -> None:
        """Prolongation ``P`` from the unknowns (one per periodic class) to all dofs."""
        if not self.periodic:
            return
        reps, red = np.unique(self.master, return_inverse=True)
        self._P = sp.csr_matrix((np.ones(self.N), (np.arange(self.N), red)),
                                shape=(self.N, len(reps)))
        self._PT = self._P.T.tocsr()
        fixed_r = np.unique(red[self.fixed])
        free_r = np.ones(len(reps), dtype=bool)
        free_r[fixed_r] = False
        self._fixed_r, self._free_r = fixed_r, np.nonzero(free_r)[0]
        self._keep_r = sp.diags(free_r.astype(np.float64))
        self._eye_fixed_r = sp.diags((~free_r).astype(np.float64))

    def enforce(self, U: np.ndarray) -> np.ndarray:
        """Copy master values onto periodic slaves."""
        return U[self.master] if self.periodic else U

    def residual_norm(self, r: np.ndarray) -> float:
        """The norm of the residual on the unknowns (free and, if periodic, reduced)."""
        if self.periodic:
            return float(np.linalg.norm((self._PT @ r)[self._free_r]))
        return float(np.linalg.norm(r[self.free]))

    def matrix(self, data: np.ndarray) -> sp.csr_matrix:
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.N, self.N))

    def rebind(self, problem, wf: WeakForm) -> Discretisation | None:
        """This discretisation for another weak form of the same structure (the same
        problem at another parameter value): the mesh, bases, quadrature, boundary dofs and
        sparsity pattern are kept, the integrands and boundary values are the new ones.
        None when the structure differs (fields, degrees, boundary parts, the Jacobian's
        blocks): build a new one then."""
        if _structure(wf) != _structure(self.wf):
            return None
        new = copy.copy(self)
        new.problem, new.wf = problem, wf
        new._boundary = [None if bd is None else {**bd, "term": bt}
                         for bd, bt in zip(self._boundary, wf.boundary, strict=True)]
        new._dirichlet = [(dofs, pts, ds.value) for (dofs, pts, _), ds
                          in zip(self._dirichlet, wf.dirichlet, strict=True)]
        return new

    @property
    def pattern_key(self) -> bytes:
        """A digest of what a factorisation depends on besides the matrix values: the
        sparsity pattern, the fixed dofs and the periodic reduction (:class:`SolveCache`)."""
        key = getattr(self, "_pattern_key", None)
        if key is None:
            h = hashlib.blake2b(digest_size=16)
            for a in (np.asarray([self.N]), self.indices, self.indptr, self.fixed,
                      getattr(self, "master", np.zeros(0)), np.asarray([int(self.periodic)])):
                h.update(np.ascontiguousarray(a).tobytes())
            key = self._pattern_key = h.digest()
        return key

    def factor(self, data: np.ndarray, cache: SolveCache | None = None):
        """LU of the matrix with identity rows at the fixed dofs; ``solve(rhs)`` -> dU.
        ``cache``: reuse the factorisation of an equal matrix (on an equal pattern)."""
        if cache is not None:
            return cache.get(self, data)
        if self.periodic:
            A = self._keep_r @ (self._PT @ self.matrix(data) @ self._P) + self._eye_fixed_r
            lu_r = spla.splu(A.tocsc(), permc_spec=_ORDERING, options=_LU_OPTIONS)
            P, PT, fixed_r = self._P, self._PT, self._fixed_r

            def solve_r(rhs: np.ndarray) -> np.ndarray:
                b = PT @ rhs
                b[fixed_r] = 0.0
                return P @ lu_r.solve(b)

            return solve_r
        d = data.copy()
        d[self._fixed_data] = 0.0
        d[self._fixed_diag] = 1.0
        # the CSR arrays read as CSC describe the transpose: factor it, solve with trans="T"
        lu = spla.splu(sp.csc_matrix((d, self.indices, self.indptr), shape=(self.N, self.N)),
                       permc_spec=_ORDERING, options=_LU_OPTIONS)
        fixed = self.fixed

        def solve(rhs: np.ndarray) -> np.ndarray:
            b = rhs.copy()
            b[fixed] = 0.0
            return lu.solve(b, trans="T")

        return solve

    def _scatter(self, key, loc: np.ndarray, parts: list) -> None:
        parts.append((self._pos[key], loc.ravel()))

    def _gather(self, parts: list) -> np.ndarray:
        if not parts:
            return np.zeros(self.nnz)
        return np.bincount(np.concatenate([p for p, _ in parts]),
                           np.concatenate([v for _, v in parts]), minlength=self.nnz)

    def jacobian_data(self, U: np.ndarray, t: float | None = None) -> np.ndarray:
        """The Jacobian's values on :attr:`indices`/:attr:`indptr`."""
        env = self._env(U, t)
        shape = self.dx.shape
        parts: list = []
        for form in self.wf.equations:
            pairs = [(0, form.source)] + [(i + 1, fl) for i, fl in enumerate(form.flux)]
            T = self.phi[form.test]
            blocks: dict = {}
            for a, it in pairs:
                for (g, b), jx in it.jac.items():
                    c = _bcast(evaluate_numpy(jx, env), shape) * self.dx
                    loc = np.matmul((T[a] * c[None]).transpose(1, 0, 2),
                                    self.phi[g][b].transpose(1, 2, 0))  # e, i, j
                    blocks[g] = blocks[g] + loc if g in blocks else loc
            for g, loc in blocks.items():
                self._scatter(("cell", form.test, g), loc, parts)
        for k, bd in enumerate(self._boundary):
            if bd is None:
                continue
            it = bd["term"].integrand
            benv = self._benv(bd, U, t)
            for (g, _), jx in it.jac.items():
                c = _bcast(evaluate_numpy(jx, benv), bd["dx"].shape) * bd["dx"]
                loc = np.matmul((bd["test"][0] * c[None]).transpose(1, 0, 2),
                                bd["trial"][g][0].transpose(1, 2, 0))
                self._scatter(("facet", k, g), loc, parts)
        return self._gather(parts)

    def jacobian(self, U: np.ndarray, t: float | None = None) -> sp.csr_matrix:
        return self.matrix(self.jacobian_data(U, t))

    def mass_data(self, t: float | None = None) -> np.ndarray:
        """``int m_g psi_g phi`` (time-derivative coefficients) on the pattern."""
        return self._weighted_mass("mass", t)

    def inertia_data(self, t: float | None = None) -> np.ndarray:
        """``int a_g psi_g phi`` (coefficients of the second time derivatives) on the
        pattern."""
        return self._weighted_mass("inertia", t)

    def _weighted_mass(self, which: str, t: float | None) -> np.ndarray:
        env: dict = {c: self.x[i] for i, c in enumerate(self.problem.spatial)}
        if self.problem.time_coord is not None and t is not None:
            env[self.problem.time_coord] = float(t)
        parts: list = []
        for form in self.wf.equations:
            T = self.phi[form.test]
            for g, m in getattr(form, which).items():
                c = _bcast(evaluate_numpy(m, env), self.dx.shape) * self.dx
                loc = np.matmul((T[0] * c[None]).transpose(1, 0, 2),
                                self.phi[g][0].transpose(1, 2, 0))
                self._scatter(("cell", form.test, g), loc, parts)
        return self._gather(parts)

    def _pairs(self, f: E.Field, g: E.Field):
        gf, gg = self.gdofs[f], self.gdofs[g]      # nb_f, ne / nb_g, ne
        ne = gf.shape[1]
        r = np.broadcast_to(gf.T[:, :, None], (ne, gf.shape[0], gg.shape[0])).ravel()
        c = np.broadcast_to(gg.T[:, None, :], (ne, gf.shape[0], gg.shape[0])).ravel()
        return r, c

    def harmonic_lift(self, U: np.ndarray) -> np.ndarray:
        """Extend each field's Dirichlet values harmonically into the domain.

        A starting guess for Newton's method on steady nonlinear problems
        (better than zero inside and the boundary values on the boundary).
        """
        U = U.copy()
        fixed = np.zeros(self.N, dtype=bool)
        fixed[self.fixed] = True
        for f in self.fields:
            b = self.bases[f]
            off = self.offsets[f]
            T = self.phi[f]
            fx = fixed[off: off + b.N]
            if not fx.any() or fx.all() or f in self.pinned:
                continue
            loc = sum(np.matmul((T[i] * self.dx[None]).transpose(1, 0, 2), T[i].transpose(1, 2, 0))
                      for i in range(1, T.shape[0]))
            ed = b.element_dofs
            shp = loc.shape
            K = sp.csr_matrix((loc.ravel(), (np.broadcast_to(ed.T[:, :, None], shp).ravel(),
                                             np.broadcast_to(ed.T[:, None, :], shp).ravel())),
                              shape=(b.N, b.N))
            free = np.nonzero(~fx)[0]
            u = U[off: off + b.N]
            rhs = -(K[free][:, fx] @ u[fx])
            u[free] = spla.spsolve(K[free][:, free].tocsc(), rhs)
            U[off: off + b.N] = u
        return U

    # -- integrals -------------------------------------------------------------
    def mean_values(self, U: np.ndarray) -> dict[E.Field, float]:
        vol = float(np.sum(self.dx))
        out = {}
        for f, u in self.split(U).items():
            out[f] = float(np.sum(np.asarray(self.bases[f].interpolate(u)) * self.dx) / vol)
        return out


def _is_zero_expr(e: E.Expr) -> bool:
    return isinstance(e, E.Number) and e.value == 0


def _structure(wf: WeakForm) -> tuple:
    """What a :class:`Discretisation` is built from besides the integrands' values."""
    eqs = tuple((form.test.name,
                 tuple(sorted({g.name for it in (form.source, *form.flux) for (g, _) in it.jac}
                              | {g.name for g in form.mass} | {g.name for g in form.inertia})))
                for form in wf.equations)
    return (tuple(f.name for f in wf.fields), tuple(sorted((f.name, k) for f, k in
                                                           wf.degree.items())),
            eqs, tuple((b.test.name, repr(b.on), tuple(g.name for g, _ in b.integrand.jac))
                       for b in wf.boundary),
            tuple((d.field.name, repr(d.on)) for d in wf.dirichlet),
            tuple((n, tuple(f.name for f in fs), pair) for n, fs, pair in wf.periodic),
            tuple(sorted(f.name for f in wf.value_free)))


class SolveCache:
    """What many solves on one mesh share (parametric queries): the discretisation (bases,
    quadrature, boundary dofs, sparsity pattern; rebuilt only when the weak form's
    structure changes) and the LU factorisations. A query whose operator does not change
    (a new source, boundary value or initial value) reuses the factorisation and pays only
    its assembly and two triangular solves. Factorisations are keyed by digests of the
    matrix values and of the pattern, so a changed operator is factorised anew. ``hits`` /
    ``misses`` count reuses and new factorisations; at most ``maxsize`` are kept (least
    recently used dropped)."""

    def __init__(self, maxsize: int = 8):
        from collections import OrderedDict

        self.maxsize = int(maxsize)
        self._kept: OrderedDict = OrderedDict()
        self._discs: dict = {}
        self.hits = 0
        self.misses = 0

    def discretisation(self, problem, wf: WeakForm, mesh, intorder: int | None = None
                       ) -> Discretisation:
        """A :class:`Discretisation` of ``wf`` on ``mesh``: an earlier one rebound when the
        structure is the same, else a new one (kept for the next query)."""
        key = (id(mesh), intorder)
        old = self._discs.get(key)
        if old is not None and old[0] is mesh:
            new = old[1].rebind(problem, wf)
            if new is not None:
                return new
        disc = Discretisation(problem, wf, mesh, intorder=intorder)
        self._discs[key] = (mesh, disc)
        return disc

    def get(self, disc: Discretisation, data: np.ndarray):
        key = (disc.pattern_key, hashlib.blake2b(np.ascontiguousarray(data).tobytes(),
                                                 digest_size=16).digest())
        if key in self._kept:
            self.hits += 1
            self._kept.move_to_end(key)
            return self._kept[key]
        self.misses += 1
        solve = disc.factor(data)
        self._kept[key] = solve
        while len(self._kept) > self.maxsize:
            self._kept.popitem(last=False)
        return solve

    def __len__(self) -> int:
        return len(self._kept)
