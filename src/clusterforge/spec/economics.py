"""Build-versus-rent inputs and the reliability inputs of the goodput model."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
)

from clusterforge.spec.base import (
    Section,
)

RentBasis = Literal["cheaper", "reserved", "on-demand"]

__all__ = ["EconomicsSpec", "ReliabilitySpec", "RentBasis"]


class EconomicsSpec(Section):
    """Build-versus-rent inputs. Rent prices left unset come from the GPU's catalog row."""

    years: float = Field(4.0, gt=0, le=15, description="Ownership period, years")
    rent_basis: RentBasis = Field(
        "cheaper",
        description="Rental offer the verdict compares against: reserved (a contract that "
        "bills every hour of each term), on-demand (bills only the hours used) or whichever "
        "of the two costs less at this utilization",
    )
    cloud_usd_per_gpu_hour: float | None = Field(
        None,
        gt=0,
        le=1000,
        description="Reserved-contract rent, $/GPU-h, billed for every hour (None = the "
        "catalog's dated 1-year contract price for the GPU)",
    )
    reserved_term_years: float = Field(
        1.0,
        gt=0,
        le=5,
        description="Length of one reserved contract, years; the ownership period is covered "
        "by whole terms",
    )
    on_demand_usd_per_gpu_hour: float | None = Field(
        None,
        gt=0,
        le=1000,
        description="On-demand rent, $/GPU-h, billed per used hour (None = the catalog's "
        "dated list price for the GPU)",
    )
    utilization: float = Field(0.9, gt=0, le=1.0, description="Expected busy share of GPU-hours")
    num_staff: float = Field(
        2.0, ge=0, le=100_000, description="Operations engineers (at least 2 for on-call cover)"
    )
    staff_usd_per_year: float = Field(
        250000.0, ge=0, le=1e7, description="Loaded cost per engineer, $/yr"
    )
    maintenance_fraction_per_year: float = Field(
        0.03, ge=0, le=0.5, description="Hardware support contracts, share of capex per year"
    )
    residual_fraction: float = Field(
        0.1, ge=0, le=1.0, description="Resale value at the end, share of hardware capex"
    )
    install_fraction: float = Field(
        0.03, ge=0, le=0.5, description="Integration, installation and burn-in, share of capex"
    )
    rent_discount: float = Field(0.0, ge=0, lt=1.0, description="Negotiated discount on rent")
    datacenter_usd_per_mw: float = Field(
        11.7e6,
        ge=0,
        le=100e6,
        description="Self-build only (facility.colo_usd_per_kw_month: 0): construction cost "
        "per MW of critical IT load, $ (Cushman & Wakefield Data Center Development Cost "
        "Guide 2025: average of 19 US markets, Oct 2024, land and fit-out excluded)",
    )
    datacenter_life_years: float = Field(
        20.0,
        gt=0,
        le=60,
        description="Self-build only: straight-line life of the building, years; the share "
        "not yet depreciated at the end of the period counts as residual value",
    )
    datacenter_opex_usd_per_kw_year: float = Field(
        480.0,
        ge=0,
        le=10_000,
        description="Self-build only: running the building (facility maintenance, security, "
        "site staff; energy and IT staff are counted apart), $ per kW of critical IT load per "
        "year (Barroso, Clidaras and Hölzle, The Datacenter as a Computer, 2nd ed., 2013, "
        "§6.2: datacenter opex of about $0.04 per critical watt per month)",
    )
    discount_rate: float = Field(
        0.08,
        ge=0,
        le=1.0,
        description="Yearly rate that discounts later payments to today's dollars for the net "
        "present value: your cost of capital (Damodaran, Cost of Equity and Capital (US), "
        "January 2026: industry costs of capital mostly 6-10 %, e.g. Advertising 7.81 %, "
        "Auto & Truck 9.38 %)",
    )


class ReliabilitySpec(Section):
    """Failures, checkpoints and restarts: the inputs of the goodput model."""

    checkpoint: Literal["sync", "async"] = Field(
        "sync",
        description="sync: training waits while the checkpoint is written to storage; async: "
        "training waits only for the copy of each GPU's shard to host memory",
    )
    checkpoint_interval_s: float | None = Field(
        None,
        gt=0,
        le=30 * 86400.0,
        description="Seconds of training between checkpoints (None = Young/Daly optimum)",
    )
    detection_s: float = Field(
        600.0,
        ge=0,
        le=86400.0,
        description="Seconds from a failure to the job noticing it (PyTorch's default NCCL "
        "collective timeout is 10 minutes)",
    )
    restart_s: float = Field(
        300.0,
        ge=0,
        le=86400.0,
        description="Seconds to requeue, start containers and initialise NCCL (stated "
        "assumption; measure yours), on top of reading the checkpoint back",
    )
    repair_days: float = Field(
        5.0,
        gt=0,
        le=365.0,
        description="Days until a failed node returns to the spare pool (repair or RMA; "
        "stated assumption)",
    )
    failure_rate_scale: float = Field(
        1.0,
        ge=0,
        le=100.0,
        description="Multiplier on every catalog failure rate (1 = the Llama 3 H100 fleet)",
    )
    async_copy_gbyte_per_s: float = Field(
        50.0,
        gt=0,
        le=10000.0,
        description="async checkpoints: device-to-host copy per GPU, GB/s (PCIe Gen5 x16 "
        "carries 64 GB/s per direction before protocol overhead)",
    )
    spare_swap_s: float = Field(
        600.0,
        ge=0,
        le=7 * 86400.0,
        description="Seconds to bring a spare into the job after a hardware failure (power "
        "on, boot, health check, join the allocation; stated assumption): 0 for hot spares "
        "already up and checked in the job's leaf",
    )
