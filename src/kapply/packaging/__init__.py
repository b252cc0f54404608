"""kapp-controller's packaging layer (PackageRepository, PackageInstall, Package, PackageMetadata) on kapply's App
controller: the resources' vocabulary (`names`), their specs (`spec`) and version selection (`versions`).
docs/packages.md describes the model."""
