"""Only what pyproject.toml cannot say: the top-level themes/ (the source, per the project layout) ships inside the
package as gpuadmin/themes, so an installed wheel finds them with importlib.resources. pyproject's packages.find
cannot add a package mapped from another folder, hence the list here (same discovery as find: namespaces included).
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["gpuadmin*"]), "gpuadmin.themes"],
    package_dir={"gpuadmin.themes": "themes"},
)
