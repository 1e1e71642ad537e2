"""inductor_fix: stop torch.compile(mode="max-autotune") crashing on aliased Triton template inputs."""

from pathlib import Path

from setuptools import find_packages, setup

setup(
    name="inductor_fix",
    version="0.1.0",
    description=(
        "Fix for PyTorch Inductor's Triton template codegen-cache crash on aliased inputs "
        "(pytorch/pytorch#188069) for torch 2.9-2.14"
    ),
    long_description=Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="BSD-3-Clause",
    python_requires=">=3.10",
    packages=find_packages(include=["inductor_fix", "inductor_fix.*"]),
    # torch is deliberately not a requirement: the fix patches the torch you
    # already have and must never make pip replace it.
    install_requires=["packaging>=20"],
    extras_require={
        # Only for a venv without torch: an installed torch >= 2.8 is kept as is. numpy:
        # torch does not require it, but torch.testing and Inductor's benchmarks import it.
        "check": ["torch>=2.8", "numpy"],
        "test": ["torch>=2.8", "numpy", "pytest>=7", "hypothesis>=6.100", "expecttest>=0.2"],
    },
    entry_points={"console_scripts": ["inductor-fix=inductor_fix.cli:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Framework :: Pytest",
        "Intended Audience :: Developers",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
