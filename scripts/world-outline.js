// Generates the world land outline of the home page's map (app/src/pages/home/land-110m.txt):
// Natural Earth's 1:110m land (public domain), as the npm package world-atlas 2.0.2 ships it in
// TopoJSON, turned into GeoJSON by topojson-client 3, then into one SVG path in degrees,
// equirectangular (x = longitude, y = -latitude), simplified by Douglas-Peucker with a tolerance
// of 0.3 degrees, rings under 0.6 square degrees and Antarctica left out, rings crossing the
// antimeridian drawn on both sides. Run once, outside the build, from a scratch directory:
//
//   mkdir /tmp/world && cd /tmp/world && npm install world-atlas@2.0.2 topojson-client@3
//   NODE_PATH=/tmp/world/node_modules node scripts/world-outline.js > app/src/pages/home/land-110m.txt
//
// (run the second line from the repository). Arguments: tolerance and smallest ring area, in
// degrees (default 0.3 0.6).
const topojson = require('topojson-client');
const land = require('world-atlas/land-110m.json');
const tol = parseFloat(process.argv[2] || '0.3');
const minArea = parseFloat(process.argv[3] || '0.6');
const geo = topojson.feature(land, land.objects.land);
const polys = [];
for (const f of geo.features || [geo]) {
  const g = f.geometry;
  for (const p of g.type === 'Polygon' ? [g.coordinates] : g.coordinates) polys.push(p);
}
function dp(pts, eps) {
  if (pts.length < 3) return pts;
  const keep = new Array(pts.length).fill(false);
  keep[0] = keep[pts.length - 1] = true;
  const stack = [[0, pts.length - 1]];
  while (stack.length) {
    const [a, b] = stack.pop();
    const [x1, y1] = pts[a], [x2, y2] = pts[b];
    const dx = x2 - x1, dy = y2 - y1, len = Math.hypot(dx, dy);
    let best = -1, at = -1;
    for (let i = a + 1; i < b; i++) {
      const [x, y] = pts[i];
      const d = len === 0 ? Math.hypot(x - x1, y - y1) : Math.abs(dy * x - dx * y + x2 * y1 - y2 * x1) / len;
      if (d > best) { best = d; at = i; }
    }
    if (best > eps) { keep[at] = true; stack.push([a, at], [at, b]); }
  }
  return pts.filter((_, i) => keep[i]);
}
const area = (r) => Math.abs(r.reduce((s, [x, y], i) => { const [x2, y2] = r[(i + 1) % r.length]; return s + x * y2 - x2 * y; }, 0) / 2);
const f1 = (v) => { const s = (Math.round(v * 10) / 10).toFixed(1).replace(/\.0$/, ''); return s.replace(/^(-?)0\./, '$1.'); };
let d = '', kept = 0, rings = 0;
for (const poly of polys) {
  if (Math.max(...poly[0].map((c) => c[1])) < -55) continue; // Antarctica: off the map
  for (const ring of poly) {
    if (area(ring) < minArea) continue;
    // Split the closed ring at its first point and its farthest point so DP keeps the shape.
    // Longitudes made continuous: a ring crossing the antimeridian jumps from 180 to -180.
    let off = 0, last = null;
    const pts = ring.map(([lon, lat]) => {
      if (last !== null && lon + off - last > 180) off -= 360;
      else if (last !== null && lon + off - last < -180) off += 360;
      last = lon + off;
      return [Math.round((lon + off) * 10) / 10, Math.round(-lat * 10) / 10];
    });
    let far = 0, fd = -1;
    pts.forEach(([x, y], i) => { const dd = Math.hypot(x - pts[0][0], y - pts[0][1]); if (dd > fd) { fd = dd; far = i; } });
    const s = dp(pts.slice(0, far + 1), tol).concat(dp(pts.slice(far), tol).slice(1));
    const out = s.filter((p, i) => i === 0 || p[0] !== s[i - 1][0] || p[1] !== s[i - 1][1]);
    if (out.length > 1 && out[0][0] === out[out.length - 1][0] && out[0][1] === out[out.length - 1][1]) out.pop();
    if (out.length < 3) continue;
    const lons = out.map((p) => p[0]);
    const shifts = [0];
    if (Math.max(...lons) > 180) shifts.push(-360);
    if (Math.min(...lons) < -180) shifts.push(360);
    for (const shift of shifts) {
    kept += out.length; rings++;
    let [px, py] = out[0];
    px += shift;
    let seg = 'M' + f1(px) + ' ' + f1(py) + 'l';
    let first = true;
    for (const [x0, y] of out.slice(1)) {
      const x = x0 + shift;
      const dx = f1(x - px), dy = f1(y - py);
      seg += (first || dx.startsWith('-') ? '' : ' ') + dx + (dy.startsWith('-') ? '' : ' ') + dy;
      first = false; px = x; py = y;
    }
    d += seg + 'z';
    }
  }
}
process.stderr.write(`rings ${rings}, points ${kept}, bytes ${d.length}\n`);
process.stdout.write(d);
