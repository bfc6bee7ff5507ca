#!/usr/bin/env python3
"""Generates fsaudit's Grafana dashboards (grafana/dashboards/*.json).

The JSON files are committed; this script is their source. After editing it run
    python3 grafana/generate_dashboards.py
and commit both. The ctest `prometheus.dashboards_up_to_date` fails when they differ.

Every panel and query uses the datasource variable `${datasource}`; queries filter on the
variables `$instance` and `$target` (filesystem mount point / canary) or `$pool` (ZFS pool).
Multi-value variables use the regex `.*` for "All", so every matcher is `=~`.
"""
import json
import os
import sys

import yaml

# Shared thresholds (one owner: alerts/thresholds.yml, also read by the alert rules' generator).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "alerts", "thresholds.yml")) as _f:
    THRESHOLDS = yaml.safe_load(_f)
SCRUB_OVERDUE = THRESHOLDS["scrub_overdue_days"]

DS = {"type": "prometheus", "uid": "${datasource}"}
I = 'instance=~"$instance"'
T = 'target=~"$target"'
# Latency is sampled per device stack: keep the stacks that hold a selected target (info series, value 1).
ON_STACKS = f'* on (instance, stack) group_left () max by (instance, stack) (fsaudit_latency_stack_info{{{I}, {T}}})'
P = 'pool=~"$pool"'


def q(expr, legend="", instant=False, fmt=None, ref=None):
    t = {"datasource": DS, "expr": expr, "legendFormat": legend or "__auto", "range": not instant, "instant": instant}
    if fmt:
        t["format"] = fmt
    if ref:
        t["refId"] = ref
    return t


class Dash:
    def __init__(self, uid, title, description, variables, tags=("fsaudit", "storage")):
        self.uid, self.title, self.description, self.variables, self.tags = uid, title, description, variables, list(tags)
        self.panels = []
        self.x = self.y = self.row_h = 0
        self.next_id = 1

    def _place(self, w, h):
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        pos = {"x": self.x, "y": self.y, "w": w, "h": h}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def row(self, title):
        if self.x:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        self.panels.append({"type": "row", "title": title, "id": self.next_id, "collapsed": False,
                            "gridPos": {"x": 0, "y": self.y, "w": 24, "h": 1}, "panels": []})
        self.next_id += 1
        self.y += 1

    def panel(self, ptype, title, targets, w=12, h=8, description="", unit=None, options=None,
              overrides=None, mappings=None, thresholds=None, transformations=None, custom=None, decimals=None,
              min_=None, max_=None):
        # A number without its unit or a panel without a description leaves the reader guessing.
        if not unit or not description:
            raise ValueError(f"panel {title!r}: every panel needs a unit and a description")
        for i, t in enumerate(targets):
            t.setdefault("refId", chr(ord("A") + i))
        defaults = {"custom": custom or {}}
        if unit:
            defaults["unit"] = unit
        if mappings:
            defaults["mappings"] = mappings
        if thresholds:
            defaults["thresholds"] = {"mode": "absolute", "steps": thresholds}
        if decimals is not None:
            defaults["decimals"] = decimals
        if min_ is not None:
            defaults["min"] = min_
        if max_ is not None:
            defaults["max"] = max_
        p = {"type": ptype, "title": title, "id": self.next_id, "datasource": DS, "description": description,
             "gridPos": self._place(w, h), "targets": targets,
             "fieldConfig": {"defaults": defaults, "overrides": overrides or []}, "options": options or {}}
        if transformations:
            p["transformations"] = transformations
        self.next_id += 1
        self.panels.append(p)
        return p

    def json(self):
        return {
            "__inputs": [], "uid": self.uid, "title": self.title, "description": self.description,
            "tags": self.tags, "editable": True, "graphTooltip": 1, "schemaVersion": 39, "version": 1,
            "time": {"from": "now-24h", "to": "now"}, "refresh": "1m", "timezone": "",
            "timepicker": {}, "fiscalYearStartMonth": 0, "liveNow": False, "weekStart": "",
            "annotations": {"list": [{
                "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True,
                "hide": True, "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts", "type": "dashboard"}]},
            "links": [{"asDropdown": False, "icon": "external link", "includeVars": True, "keepTime": True,
                       "tags": ["fsaudit"], "targetBlank": False, "title": "fsaudit", "type": "dashboards"}],
            "templating": {"list": self.variables},
            "panels": self.panels,
        }


def var_datasource():
    return {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
            "current": {}, "hide": 0, "includeAll": False, "multi": False, "options": [], "refresh": 1,
            "regex": "", "skipUrlSync": False}


def var_query(name, label, query, multi=True, depends=""):
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "definition": query, "query": {"query": query, "refId": "PrometheusVariableQueryEditor-VariableQuery"},
            "current": {"selected": True, "text": ["All"] if multi else "", "value": ["$__all"] if multi else ""},
            "hide": 0, "includeAll": multi, "allValue": ".*" if multi else None, "multi": multi,
            "options": [], "refresh": 2, "regex": "", "skipUrlSync": False, "sort": 1,
            "description": depends}


def instance_var(multi=True):
    return var_query("instance", "Host", "label_values(fsaudit_build_info, instance)", multi,
                     "fsauditd instances (from fsaudit_build_info)")


def target_var():
    return var_query("target", "Filesystem / canary",
                     'label_values(fsaudit_filesystem_size_bytes{instance=~"$instance"}, target)', True,
                     "Monitored filesystems by mount point")


def pool_var():
    return var_query("pool", "ZFS pool", 'label_values(fsaudit_zfs_pool_state{instance=~"$instance"}, pool)', True,
                     "ZFS pools")


GREEN, YELLOW, ORANGE, RED, BLUE = "green", "yellow", "orange", "red", "blue"


def steps(*pairs):
    return [{"color": c, "value": v} for v, c in pairs]


def text_map(**colors):
    return [{"type": "value", "options": {k: {"color": c, "index": i, "text": k.upper() if k != "silent" else "SILENT"}
                                          for i, (k, c) in enumerate(colors.items())}}]


def color_cell(field, mappings):
    return {"matcher": {"id": "byName", "options": field},
            "properties": [{"id": "mappings", "value": mappings},
                           {"id": "custom.cellOptions", "value": {"type": "color-background", "mode": "basic"}}]}


def hide_fields(*names):
    return {"id": "organize", "options": {"excludeByName": {n: True for n in names}, "renameByName": {}}}


POOL_STATE_MAP = text_map(online=GREEN, degraded=ORANGE, faulted=RED, offline=RED, unavail=RED, removed=RED,
                          suspended=RED, avail=GREEN, inuse=YELLOW, unknown=ORANGE)
VERDICT_MAP = text_map(repaired=GREEN, detected=YELLOW, silent=RED, unverified=ORANGE, not_injectable=ORANGE,
                       refused=ORANGE, error=ORANGE, none=BLUE)
ALERTSTATE_MAP = text_map(firing=RED, pending=ORANGE)
TABLE = {"showHeader": True, "cellHeight": "sm", "footer": {"show": False, "reducer": ["sum"], "fields": ""}}
BARGAUGE = {"displayMode": "gradient", "orientation": "horizontal", "showUnfilled": True, "valueMode": "color",
            "namePlacement": "auto", "sizing": "auto", "minVizHeight": 16, "minVizWidth": 8, "maxVizHeight": 300,
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}}
STAT = {"colorMode": "background", "graphMode": "none", "justifyMode": "auto", "orientation": "auto",
        "textMode": "auto", "wideLayout": True, "showPercentChange": False,
        "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}}
TS = {"legend": {"displayMode": "table", "placement": "right", "showLegend": True, "calcs": ["lastNotNull", "max"]},
      "tooltip": {"mode": "multi", "sort": "desc"}}


def ts_custom(draw="line", fill=10, stack=False):
    return {"drawStyle": draw, "lineWidth": 1, "fillOpacity": fill, "showPoints": "never", "spanNulls": False,
            "stacking": {"mode": "normal" if stack else "none", "group": "A"}, "axisPlacement": "auto"}


def days_to_full(metric, selector, window="6h"):
    # predict_linear(v[w], 0) is the fitted value now; -deriv(v[w]) the fitted shrink per second (same
    # regression). Not shrinking (or < 1 B/s) shows as the 3650-day cap ("not filling").
    return (f"clamp_max(predict_linear({metric}{{{selector}}}[{window}], 0)"
            f" / clamp_min(-deriv({metric}{{{selector}}}[{window}]), 1) / 86400, 3650)")


# ------------------------------------------------------------------------------------------------
def fleet():
    d = Dash("fsaudit-fleet", "fsaudit / Fleet overview",
             "Every host and pool at a glance: health, canary verdicts (silent in red), scrub age, device "
             "errors in the last 24 h, fsync p99 and days until full.",
             [var_datasource(), instance_var(), target_var(), pool_var()])
    d.row("At a glance")
    d.panel("stat", "fsauditd up", [q(f'sum(up{{job=~".*fsaudit.*", {I}}})', instant=True)], w=4, h=4,
            unit="none", description="Number of fsauditd instances Prometheus scrapes successfully.",
            options=STAT, thresholds=steps((None, RED), (1, GREEN)))
    d.panel("stat", "fsauditd down", [q(f'count(up{{job=~".*fsaudit.*", {I}}} == 0) or vector(0)', instant=True)],
            w=4, h=4, unit="none", description="fsauditd instances that do not answer (no storage alert can fire for them).",
            options=STAT, thresholds=steps((None, GREEN), (1, RED)))
    d.panel("stat", "fsaudit alerts firing",
            [q(f'count(ALERTS{{alertname=~"Fsaudit.*", alertstate="firing", {I}}}) or vector(0)', instant=True)],
            w=4, h=4, unit="none", description="Alerts from fsaudit.rules.yml that are firing now.",
            options=STAT, thresholds=steps((None, GREEN), (1, RED)))
    d.panel("stat", "Canaries silent where detection was expected",
            [q(f'count((fsaudit_canary_last_verdict{{verdict="silent", {I}}} == 1) and on (instance, target) '
               f'fsaudit_canary_expected_verdict_info{{expected!="blind", {I}}}) or vector(0)', instant=True)],
            w=4, h=4, unit="none", description="Detection regressions: a checksumming stack served corrupted data silently.",
            options=STAT, thresholds=steps((None, GREEN), (1, RED)))
    d.panel("stat", "Probes failing", [q(f'count(fsaudit_probe_success{{{I}}} == 0) or vector(0)', instant=True)],
            w=4, h=4, unit="none", description="Probe runs whose last result was a failure (see the Pool detail dashboard for reasons).",
            options=STAT, thresholds=steps((None, GREEN), (1, ORANGE)))
    d.panel("stat", "Filesystems without data checksums",
            [q(f'count(fsaudit_stack_info{{data_checksums="off", {I}, {T}}}) or vector(0)', instant=True)],
            w=4, h=4, unit="none", description="Monitored filesystems whose data could rot unseen (XFS, ext4, md...).",
            options=STAT, thresholds=steps((None, GREEN), (1, YELLOW)))

    d.row("Health")
    d.panel("table", "ZFS pool health", [q(f'fsaudit_zfs_pool_state{{{I}, {P}}} == 1', instant=True, fmt="table")],
            w=8, unit="none", description="Current state of every ZFS pool (zpool status).",
            options=TABLE, overrides=[color_cell("state", POOL_STATE_MAP)],
            transformations=[hide_fields("Time", "Value", "__name__", "job")])
    d.panel("table", "Latest canary verdict",
            [q(f'(fsaudit_canary_last_verdict{{{I}}} == 1) * on (instance, target) group_left (expected) '
               f'fsaudit_canary_expected_verdict_info{{{I}}}', instant=True, fmt="table")],
            w=8, unit="none", description="Last verdict of each injected-corruption canary. SILENT = corrupted data was "
                             "returned with success: a detection regression where 'expected' is repaired or "
                             "detected, a known-blind stack where it is blind.",
            options=TABLE, overrides=[color_cell("verdict", VERDICT_MAP)],
            transformations=[hide_fields("Time", "Value", "__name__", "job")])
    d.panel("table", "Firing and pending fsaudit alerts",
            [q(f'ALERTS{{alertname=~"Fsaudit.*", {I}}}', instant=True, fmt="table")],
            w=8, unit="none", description="From Prometheus's ALERTS series (rules in fsaudit.rules.yml).",
            options=TABLE, overrides=[color_cell("alertstate", ALERTSTATE_MAP)],
            transformations=[hide_fields("Time", "Value", "__name__")])
    d.panel("bargauge", "Days since last completed scrub",
            [q(f'fsaudit_scrub_last_completed_age_seconds{{{I}, {T}}} / 86400', "{{instance}} {{target}}", instant=True)],
            w=8, unit="d", decimals=1, description=f"Scrub age per target; overdue at {SCRUB_OVERDUE} days (FsauditScrubOverdue).",
            options=BARGAUGE, thresholds=steps((None, GREEN), (30, YELLOW), (SCRUB_OVERDUE, RED)), min_=0)
    d.panel("bargauge", "Device errors in the last 24 h",
            # A vdev's counter at 0 is no series by default (zfs.detail: compact): every vdev is listed
            # from its state, with 0 where it has none.
            [q(f'sum by (instance, pool, vdev) (increase(fsaudit_zfs_vdev_errors{{{I}, {P}}}[24h]))'
               f' or sum by (instance, pool, vdev) (0 * fsaudit_zfs_vdev_state{{{I}, {P}}})',
               "{{instance}} zfs {{pool}} {{vdev}}", instant=True),
             q(f'sum by (instance, target, device) (increase(fsaudit_btrfs_device_errors{{{I}, {T}}}[24h]))',
               "{{instance}} btrfs {{target}} {{device}}", instant=True),
             q(f'sum by (instance, device) (increase(fsaudit_kernel_errors_total{{{I}}}[24h]))',
               "{{instance}} kernel {{device}}", instant=True),
             q(f'sum by (instance, target, device) (increase(fsaudit_bcachefs_device_errors{{{I}, {T}}}[24h]))',
               "{{instance}} bcachefs {{target}} {{device}}", instant=True)],
            w=8, unit="short", decimals=0,
            description="Increase of ZFS vdev, btrfs and bcachefs device error counters and kernel storage error lines.",
            options=BARGAUGE, thresholds=steps((None, GREEN), (1, RED)), min_=0)
    d.panel("bargauge", "fsync p99 (rolling window)",
            [q(f'max by (instance, stack) (fsaudit_fsync_latency_window_seconds{{percentile="99", {I}}} {ON_STACKS})',
               "{{instance}} {{stack}}", instant=True)],
            w=8, unit="s", description="p99 of fsaudit's 4 KiB write+fsync samples over the sampler's window, per "
                                       "device stack (pool, btrfs filesystem, md array, block device) holding the "
                                       "selected targets.",
            options=BARGAUGE, thresholds=steps((None, GREEN), (0.1, YELLOW), (0.5, RED)), min_=0)

    d.row("Detection coverage")
    d.panel("stat", "Fleet detection coverage",
            [q(f'sum(fsaudit_detection_covered_bytes{{{I}}}) / sum(fsaudit_detection_production_bytes{{{I}}})',
               instant=True)],
            w=4, h=8, unit="percentunit", decimals=0,
            description="Share of production bytes whose stack a canary has proven (same stack signature, "
                        "expectation met within its interval plus grace). Close a gap with "
                        "`fsauditd canary suggest TARGET`.",
            options=STAT, thresholds=steps((None, RED), (0.5, YELLOW), (0.9, GREEN)), min_=0, max_=1)
    d.panel("bargauge", "Detection coverage per host",
            [q(f'fsaudit_detection_coverage_ratio{{{I}}}', "{{instance}}", instant=True)],
            w=6, unit="percentunit", decimals=0,
            description="Covered bytes / production bytes per host (FsauditDetectionCoverageDropped on a drop).",
            options=BARGAUGE, thresholds=steps((None, RED), (0.5, YELLOW), (0.9, GREEN)), min_=0, max_=1)
    d.panel("table", "Uncovered stacks",
            [q(f'(fsaudit_detection_covered{{{I}, {T}}} == 0) * on (instance, target) group_left (fs, data_checksums, '
               f'redundancy, compression, kernel_release, device_model, device_transport) fsaudit_stack_info{{{I}, {T}}}',
               instant=True, fmt="table")],
            w=14, unit="none", description="Production filesystems no canary currently covers, with their stack signature "
                              "(FsauditUncoveredStack after 24 h). `fsauditd canary suggest TARGET` prints the "
                              "canary config that would cover one.",
            options=TABLE, transformations=[hide_fields("Time", "Value", "__name__", "job")])
    d.panel("table", "Setup findings",
            [q(f'fsaudit_setup_finding{{{I}, {T}}} == 1', instant=True, fmt="table")],
            w=24, unit="none", description="How each filesystem is set up decides whether corruption can be seen: data not "
                              "checksummed, not repairable, stacked ZFS pools, overdue scrubs... (rule table in the "
                              "README; evidence and fix in the journal: journalctl FSAUDIT_PROBE=setup).",
            options=TABLE, overrides=[color_cell("severity", text_map(critical=RED, warning=ORANGE, info=BLUE))],
            transformations=[hide_fields("Time", "Value", "__name__", "job")])

    d.row("Capacity")
    d.panel("bargauge", "Days until full",
            [q("sort(" + days_to_full("fsaudit_filesystem_avail_bytes", f"{I}, {T}") + ")",
               "{{instance}} {{target}}", instant=True)],
            w=12, unit="d", decimals=1,
            description="Linear fit (predict_linear) over the last 6 h; 3650 = not filling.",
            options=BARGAUGE, thresholds=steps((None, RED), (7, ORANGE), (30, GREEN)), min_=0, max_=365)
    d.panel("bargauge", "Used space",
            [q(f'1 - fsaudit_filesystem_avail_bytes{{{I}, {T}}} / fsaudit_filesystem_size_bytes{{{I}, {T}}}',
               "{{instance}} {{target}}", instant=True)],
            w=12, unit="percentunit", description="Used fraction as seen by unprivileged users (1 - avail/size).",
            options=BARGAUGE, thresholds=steps((None, GREEN), (0.8, YELLOW), (0.9, RED)), min_=0, max_=1)
    return d


# ------------------------------------------------------------------------------------------------
def pool_detail():
    d = Dash("fsaudit-pool", "fsaudit / Pool detail",
             "One host's pools and filesystems: device/vdev states and error counters, scrub history, "
             "canary history, fsync latency (mean and window percentiles), kernel error events, probe status.",
             [var_datasource(), instance_var(multi=False), pool_var(), target_var()])
    d.row("Devices and vdevs")
    d.panel("table", "ZFS vdev tree", [q(f'fsaudit_zfs_vdev_state{{{I}, {P}}} == 1', instant=True, fmt="table")],
            w=12, h=9, unit="none", description="Every vdev (mirror/raidz/log/cache/spare and leaves) with its current state.",
            options=TABLE, overrides=[color_cell("state", POOL_STATE_MAP)],
            transformations=[hide_fields("Time", "Value", "__name__", "job", "instance")])
    d.panel("timeseries", "ZFS vdev error counters",
            [q(f'fsaudit_zfs_vdev_errors{{{I}, {P}}}'
               f' or on (instance, pool, vdev) sum by (instance, pool, vdev) (0 * fsaudit_zfs_vdev_state{{{I}, {P}}})',
               "{{pool}} {{vdev}} {{kind}}")],
            w=12, h=9, unit="short", description="read/write/checksum counters per vdev (zpool clear resets them); "
                                                 "a vdev without errors shows one 0 line (its counters at 0 are no series by default).",
            options=TS, custom=ts_custom())
    d.panel("timeseries", "btrfs / bcachefs device error counters",
            [q(f'fsaudit_btrfs_device_errors{{{I}, {T}}}', "btrfs {{target}} {{device}} {{kind}}"),
             q(f'fsaudit_bcachefs_device_errors{{{I}, {T}}}', "bcachefs {{target}} {{device}} {{kind}}")],
            w=12, unit="short", description="btrfs write/read/flush/corruption/generation counters and bcachefs "
                                            "io/checksum error counters per device.",
            options=TS, custom=ts_custom())
    d.panel("timeseries", "ext4 / XFS / md error state",
            [q(f'fsaudit_ext4_errors{{{I}, {T}}}', "ext4 {{target}} errors_count"),
             q(f'fsaudit_xfs_shutdown{{{I}, {T}}}', "xfs {{target}} shut down"),
             q(f'fsaudit_md_degraded{{{I}}}', "md {{device}} degraded"),
             q(f'fsaudit_md_mismatch_sectors{{{I}}}', "md {{device}} mismatches")],
            w=12, unit="short", description="Filesystems without data checksums: ext4 superblock error count, XFS "
                                            "shutdown, md degraded members and mismatch count of the last check.",
            options=TS, custom=ts_custom())
    d.panel("timeseries", "ZFS pool state",
            [q(f'fsaudit_zfs_pool_state{{{I}, {P}}} == 1', "{{pool}} {{state}}")],
            w=12, unit="short", description="The state each pool is in (one line per pool and state it was in: "
                                            "a line other than online is the trouble).",
            options=TS, custom=ts_custom(draw="line", fill=30), min_=0, max_=1)

    d.row("Disks")
    d.panel("table", "Disks under the watched filesystems",
            [q(f'fsaudit_disk_info{{{I}}}', instant=True, fmt="table", ref="A"),
             q(f'fsaudit_disk_at_risk{{{I}}}', instant=True, fmt="table", ref="B")],
            w=24, h=8, unit="none",
            description="Every whole disk under a watched filesystem: model, serial, WWN and /dev/disk/by-id name "
                        "(which drive to pull), its bus, and whether its SMART says it may fail soon (Value #B = 1).",
            options=TABLE, transformations=[{"id": "merge", "options": {}},
                                            hide_fields("Time", "Value #A", "__name__", "job", "instance")])
    d.panel("timeseries", "Redundancy margin and members at risk",
            [q(f'fsaudit_redundancy_margin{{{I}, {T}}}', "margin {{target}}"),
             q(f'fsaudit_members_at_risk{{{I}, {T}}}', "at risk {{target}}")],
            w=12, unit="short", description="How many more member failures each filesystem survives now (0 = none), "
                                            "and how many of its disks SMART flags as at risk (no line while none is).",
            options=TS, custom=ts_custom(), min_=0)
    d.panel("timeseries", "SMART sector and media errors",
            [q(f'fsaudit_disk_ata_reallocated_sectors{{{I}}}', "{{disk}} reallocated"),
             q(f'fsaudit_disk_ata_pending_sectors{{{I}}}', "{{disk}} pending"),
             q(f'fsaudit_disk_ata_offline_uncorrectable_sectors{{{I}}}', "{{disk}} offline uncorrectable"),
             q(f'fsaudit_disk_nvme_media_errors{{{I}}}', "{{disk}} NVMe media errors"),
             q(f'fsaudit_disk_scsi_grown_defects{{{I}}}', "{{disk}} SCSI grown defects")],
            w=12, unit="short", description="Raw SMART counters that predict failure: ATA reallocated, pending and "
                                            "offline-uncorrectable sectors, NVMe media errors, SCSI grown defects. "
                                            "Any rise is worth a look.",
            options=TS, custom=ts_custom())
    d.panel("timeseries", "Disk temperature",
            [q(f'fsaudit_disk_temperature_celsius{{{I}}}', "{{disk}}")],
            w=12, unit="celsius", description="Current temperature each disk's SMART reports (read every 30 minutes).",
            options=TS, custom=ts_custom())
    d.panel("timeseries", "NVMe wear and SMART read state",
            [q(f'fsaudit_disk_nvme_percentage_used_ratio{{{I}}}', "{{disk}} life used"),
             q(f'fsaudit_disk_nvme_available_spare_ratio{{{I}}}', "{{disk}} spare"),
             q(f'fsaudit_disk_smart_state{{{I}, state!="ok"}} == 1', "{{disk}} {{state}}")],
            w=12, unit="percentunit", description="NVMe life used and available spare (0-1), and disks whose last SMART "
                                                  "read was not ok (standby: asleep and not woken; unsupported: no SMART).",
            options=TS, custom=ts_custom())

    d.row("Scrubs")
    d.panel("timeseries", "Scrub / resilver progress",
            [q(f'fsaudit_scrub_running{{{I}, {T}}}', "running {{target}}"),
             q(f'fsaudit_scrub_progress_ratio{{{I}, {T}}}', "progress {{target}}"),
             q(f'fsaudit_zfs_scan_progress_ratio{{{I}, {P}}}', "zfs scan {{pool}}")],
            w=8, unit="percentunit",
            description="1 while a scrub runs on the target; progress of running scrubs and of ZFS scans "
                        "(scrub or resilver, from zpool status).",
            options=TS, custom=ts_custom(), min_=0, max_=1)
    d.panel("timeseries", "Last scrub duration",
            [q(f'fsaudit_zfs_scan_duration_seconds{{{I}, {P}}}', "zfs {{pool}}"),
             q(f'fsaudit_scrub_last_duration_seconds{{{I}, {T}}}', "{{target}}")],
            w=8, unit="s", description="Duration of the latest finished scrub.", options=TS, custom=ts_custom())
    d.panel("timeseries", "Last scrub findings",
            [q(f'fsaudit_zfs_scan_errors{{{I}, {P}}}', "zfs {{pool}} errors"),
             q(f'fsaudit_scrub_last_errors{{{I}, {T}}}', "{{target}} {{kind}}"),
             q(f'fsaudit_scrub_last_device_errors{{{I}, {T}}}', "{{target}} {{device}} {{kind}}")],
            w=8, unit="short", description="Errors found / repaired / uncorrectable by the latest scrub, in total and "
                                           "per member device where the tool says (btrfs).",
            options=TS, custom=ts_custom(draw="bars", fill=80))
    d.panel("timeseries", "Scrub rate",
            [q(f'fsaudit_scrub_last_rate_bytes_per_second{{{I}, {T}}} or on (instance, target) '
               f'(fsaudit_scrub_last_scrubbed_bytes{{{I}, {T}}} / fsaudit_scrub_last_duration_seconds{{{I}, {T}}})', "{{target}}"),
             q(f'fsaudit_zfs_pool_allocated_bytes{{{I}, {P}}} / fsaudit_zfs_scan_duration_seconds{{{I}, {P}}}',
               "zfs {{pool}} (allocated / last scan duration)")],
            w=12, unit="Bps", description="Average rate of the last finished scrub per target; for ZFS pools an "
                                          "estimate from allocated bytes and the last scan's duration.",
            options=TS, custom=ts_custom())
    d.panel("bargauge", "Days since last completed scrub",
            [q(f'fsaudit_scrub_last_completed_age_seconds{{{I}, {T}}} / 86400', "{{target}}", instant=True)],
            w=12, unit="d", decimals=1, options=BARGAUGE, min_=0,
            description=f"Days since the last completed scrub of each target; overdue at {SCRUB_OVERDUE} days "
                        "(FsauditScrubOverdue), +Inf = never seen completed.",
            thresholds=steps((None, GREEN), (30, YELLOW), (SCRUB_OVERDUE, RED)))

    d.row("Canaries")
    d.panel("timeseries", "Canary verdicts",
            [q(f'sum by (target, verdict) (increase(fsaudit_canary_runs_total{{{I}}}[1d]))', "{{target}} {{verdict}}")],
            w=12, unit="short", description="Canary cycles by verdict in the day before each point (daily canaries: 0 or 1).",
            options=TS, custom=ts_custom(draw="bars", fill=80),
            overrides=[{"matcher": {"id": "byRegexp", "options": ".*silent.*"},
                        "properties": [{"id": "color", "value": {"mode": "fixed", "fixedColor": RED}}]}])
    d.panel("timeseries", "Canary last verdict over time",
            [q(f'fsaudit_canary_last_verdict{{{I}}} == 1', "{{target}} {{verdict}}")],
            w=12, unit="short", description="Which verdict was current when (one line per target and verdict).",
            options=TS, custom=ts_custom(draw="points"),
            overrides=[{"matcher": {"id": "byRegexp", "options": ".*silent.*"},
                        "properties": [{"id": "color", "value": {"mode": "fixed", "fixedColor": RED}}]}])

    d.row("Latency")
    # The default exposition (latency.detail: summary) has no finite buckets: mean from sum/count.
    d.panel("timeseries", "fsync mean latency",
            [q(f'sum by (instance, stack) (rate(fsaudit_fsync_latency_seconds_sum{{{I}}}[$__rate_interval])) '
               f'/ sum by (instance, stack) (rate(fsaudit_fsync_latency_seconds_count{{{I}}}[$__rate_interval])) {ON_STACKS}',
               "{{stack}} mean")],
            w=12, h=9, unit="s", description="Mean of fsaudit's 4 KiB write+fsync samples (histogram fsaudit_fsync_latency_seconds: "
                                             "sum / count) per device stack holding the selected targets.",
            options=TS, custom=ts_custom())
    d.panel("timeseries", "fsync latency quantiles",
            [q(f'fsaudit_fsync_latency_window_seconds{{{I}}} {ON_STACKS}', "{{stack}} p{{percentile}}")],
            w=12, h=9, unit="s", description="Rolling-window percentiles from the sampler (latency.window) "
                                             "per device stack holding the selected targets.",
            options=TS, custom=ts_custom())

    d.row("Kernel and probes")
    d.panel("timeseries", "Kernel storage error events",
            [q(f'sum by (device, fs, kind) (increase(fsaudit_kernel_errors_total{{{I}}}[$__rate_interval]))',
               "{{device}} {{fs}} {{kind}}")],
            w=12, unit="short", description="Classified kernel log lines (csum failed, I/O error, EXT4-fs error, ...).",
            options=TS, custom=ts_custom(draw="bars", fill=80))
    d.panel("table", "Probe status",
            [q(f'fsaudit_probe_success{{{I}}}', instant=True, fmt="table")],
            w=12, unit="none", description="Every host-wide probe, and every per-filesystem probe that is failing: did its last "
                              "run succeed (a per-filesystem probe's series is there only while it fails). Failure reasons are in fsaudit_probe_failure_info; hung runs in fsaudit_probe_stuck.",
            options=TABLE,
            overrides=[{"matcher": {"id": "byName", "options": "Value"},
                        "properties": [{"id": "displayName", "value": "success"},
                                       {"id": "mappings", "value": [{"type": "value", "options": {
                                           "0": {"text": "FAILED", "color": RED, "index": 0},
                                           "1": {"text": "ok", "color": GREEN, "index": 1}}}]},
                                       {"id": "custom.cellOptions", "value": {"type": "color-background"}}]}],
            transformations=[hide_fields("Time", "__name__", "job", "instance")])
    d.panel("table", "Probe work",
            [q(f'rate(fsaudit_probe_duration_seconds_total{{{I}}}[$__rate_interval]) / '
               f'rate(fsaudit_probe_runs_total{{{I}}}[$__rate_interval])', instant=True, fmt="table"),
             q(f'time() - fsaudit_probe_last_run_timestamp_seconds{{{I}}}', instant=True, fmt="table")],
            w=12, unit="s", description="Per probe type, over all its targets: average duration of a run (its own work, "
                              "not time waiting for a worker) and seconds since its last run ended.",
            options=TABLE,
            overrides=[{"matcher": {"id": "byName", "options": "Value #A"},
                        "properties": [{"id": "displayName", "value": "avg run"}, {"id": "unit", "value": "s"}]},
                       {"matcher": {"id": "byName", "options": "Value #B"},
                        "properties": [{"id": "displayName", "value": "last run ago"}, {"id": "unit", "value": "s"}]}],
            transformations=[{"id": "merge", "options": {}}, hide_fields("Time", "__name__", "job", "instance")])
    d.panel("table", "Probe failure reasons",
            [q(f'fsaudit_probe_failure_info{{{I}}}', instant=True, fmt="table")],
            w=24, h=6, unit="none", description="Why a probe failed (missing tool, permission, timeout...).", options=TABLE,
            transformations=[hide_fields("Time", "Value", "__name__", "job")])
    return d


# ------------------------------------------------------------------------------------------------
def capacity():
    d = Dash("fsaudit-capacity", "fsaudit / Capacity planning",
             "Used and free space over time, growth per day and week, predict_linear days-to-full, and the "
             "largest growers across the fleet.",
             [var_datasource(), instance_var(), target_var(), pool_var()])
    d.row("Filesystems")
    d.panel("timeseries", "Used space",
            [q(f'fsaudit_filesystem_size_bytes{{{I}, {T}}} - fsaudit_filesystem_avail_bytes{{{I}, {T}}}',
               "{{instance}} {{target}}")],
            w=12, unit="bytes", options=TS, custom=ts_custom(),
            description="size - available per filesystem: what users can no longer write (root's reserve included; "
                        "free bytes are exported only with capacity.detail: full).")
    d.panel("timeseries", "Available space",
            [q(f'fsaudit_filesystem_avail_bytes{{{I}, {T}}}', "{{instance}} {{target}}")],
            w=12, unit="bytes", options=TS, custom=ts_custom(), description="Space available to unprivileged users.")
    d.panel("timeseries", "Growth per day",
            [q(f'-deriv(fsaudit_filesystem_avail_bytes{{{I}, {T}}}[1d]) * 86400', "{{instance}} {{target}}")],
            w=12, unit="bytes", options=TS, custom=ts_custom(),
            description="Linear-fit shrink of available space over the previous day, in bytes per day.")
    d.panel("bargauge", "Growth in the last week",
            [q(f'-delta(fsaudit_filesystem_avail_bytes{{{I}, {T}}}[7d])', "{{instance}} {{target}}", instant=True)],
            w=12, unit="bytes", options=BARGAUGE, thresholds=steps((None, GREEN), (1e11, YELLOW)),
            description="Change of available space over 7 days (positive = growing usage).")
    d.panel("table", "Days until full (predict_linear)",
            [q(days_to_full("fsaudit_filesystem_avail_bytes", f"{I}, {T}", "1d"), instant=True, fmt="table"),
             q(f'predict_linear(fsaudit_filesystem_avail_bytes{{{I}, {T}}}[1d], 7 * 86400)', instant=True, fmt="table")],
            w=12, h=9, unit="d", description="Linear fit over one day. 3650 = not filling. 'available in 7 days' below 0 "
                                   "means full within a week (FsauditFilesystemFullIn7Days).",
            options={**TABLE, "sortBy": [{"displayName": "days until full", "desc": False}]},
            overrides=[{"matcher": {"id": "byName", "options": "Value #A"},
                        "properties": [{"id": "displayName", "value": "days until full"}, {"id": "unit", "value": "d"},
                                       {"id": "decimals", "value": 1},
                                       {"id": "thresholds", "value": {"mode": "absolute", "steps": steps((None, RED), (7, ORANGE), (30, GREEN))}},
                                       {"id": "custom.cellOptions", "value": {"type": "color-background"}}]},
                       {"matcher": {"id": "byName", "options": "Value #B"},
                        "properties": [{"id": "displayName", "value": "available in 7 days"}, {"id": "unit", "value": "bytes"}]}],
            transformations=[{"id": "merge", "options": {}}, hide_fields("Time", "__name__", "job")])
    d.panel("bargauge", "Largest growers across the fleet",
            [q('topk(10, -deriv(fsaudit_filesystem_avail_bytes[1d]) * 86400)', "{{instance}} {{target}}", instant=True)],
            w=12, h=9, unit="bytes", options=BARGAUGE, thresholds=steps((None, GREEN), (1e10, YELLOW), (1e11, RED)),
            description="Top 10 filesystems of all hosts by growth per day (ignores the host filter).")
    d.panel("timeseries", "Inodes used",
            [q(f'1 - fsaudit_filesystem_files_free{{{I}, {T}}} / fsaudit_filesystem_files{{{I}, {T}}}',
               "{{instance}} {{target}}")],
            w=24, unit="percentunit", options=TS, custom=ts_custom(), min_=0, max_=1,
            description="Used fraction of inodes (filesystems with dynamic inodes report 0 files and show no line).")
    d.row("ZFS pools")
    d.panel("timeseries", "ZFS pool allocated vs size",
            [q(f'fsaudit_zfs_pool_allocated_bytes{{{I}, {P}}}', "{{instance}} {{pool}} allocated"),
             q(f'fsaudit_zfs_pool_size_bytes{{{I}, {P}}}', "{{instance}} {{pool}} size")],
            w=12, unit="bytes", options=TS, custom=ts_custom(), description="zpool list SIZE and ALLOC.")
    d.panel("table", "ZFS pool days until full",
            [q(f'clamp_max((fsaudit_zfs_pool_size_bytes{{{I}, {P}}} - fsaudit_zfs_pool_allocated_bytes{{{I}, {P}}}) '
               f'/ clamp_min(deriv(fsaudit_zfs_pool_allocated_bytes{{{I}, {P}}}[1d]), 1) / 86400, 3650)',
               instant=True, fmt="table"),
             q(f'fsaudit_zfs_pool_allocated_bytes{{{I}, {P}}} / fsaudit_zfs_pool_size_bytes{{{I}, {P}}}', instant=True, fmt="table"),
             q(f'fsaudit_zfs_pool_fragmentation_ratio{{{I}, {P}}}', instant=True, fmt="table")],
            w=12, unit="d", description="Per pool: days until full (linear fit of ALLOC over a day against SIZE, 3650 = "
                              "not filling), used fraction (ALLOC / SIZE) and free-space fragmentation (ZFS slows down "
                              "above ~80 % full).",
            options=TABLE,
            overrides=[{"matcher": {"id": "byName", "options": "Value #A"},
                        "properties": [{"id": "displayName", "value": "days until full"}, {"id": "unit", "value": "d"},
                                       {"id": "decimals", "value": 1}]},
                       {"matcher": {"id": "byName", "options": "Value #B"},
                        "properties": [{"id": "displayName", "value": "capacity"}, {"id": "unit", "value": "percentunit"}]},
                       {"matcher": {"id": "byName", "options": "Value #C"},
                        "properties": [{"id": "displayName", "value": "fragmentation"}, {"id": "unit", "value": "percentunit"}]}],
            transformations=[{"id": "merge", "options": {}}, hide_fields("Time", "__name__", "job")])
    return d


def main():
    out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dashboards")
    if len(sys.argv) > 1:
        out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for name, d in (("fsaudit-fleet.json", fleet()), ("fsaudit-pool.json", pool_detail()),
                    ("fsaudit-capacity.json", capacity())):
        with open(os.path.join(out_dir, name), "w") as f:
            json.dump(d.json(), f, indent=2, sort_keys=False)
            f.write("\n")


if __name__ == "__main__":
    main()
